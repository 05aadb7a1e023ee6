// Seeded randomness for tests that compare two ways of computing one thing over many cases: the
// same seed gives the same cases on every run, so a failure can be replayed.

/** mulberry32: a seeded generator with a full period, numbers in [0, 1). */
export function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** The closed ring of the rectangle west, south, east, north. */
export const rect = (w: number, s: number, e: number, n: number): number[][] => [[w, s], [e, s], [e, n], [w, n], [w, s]];
