// Finds edges of a polygon's rings that meet where they should not, for validation.
//
// Testing every pair of edges is O(n²): 50 million pairs for a ring of 10,000 positions. Instead a
// sort-and-sweep on longitude: edges sorted by their west end, each compared only with the edges
// that start before its east end, overlap it in latitude and straddle its line. Usual rings
// (streets, coastlines, circles drawn as polygons) have short edges, so each edge has a handful
// of candidates and the check is O(n log n): a few milliseconds for 10,000 positions. The worst
// case is still quadratic: thousands of long edges overlapping in both axes, like a star of thin
// spikes, take 0.1 to 0.25 s at 10,000 positions (the suite times both kinds; 80 to 150 ms on a
// 2-core host under load from other work, up to 345 ms for the suite's thinner star), which is why
// one organization's geofence writes take turns (the write gate). Recursive halving
// and a uniform grid of edges were tried and were slower on both kinds (a long edge lands in many
// cells): seconds on the star. A Shamos–Hoey sweep would bound the worst case at O(n log n).

/** One ring as x,y pairs (closed); `ring` is its index within the polygon (0 = outer). */
export interface RingInput {
  ring: number;
  flat: Float64Array;
}

/** Two edges that meet: each named by its ring and the index of the position it starts at. */
export interface Crossing {
  ringA: number;
  segmentA: number;
  ringB: number;
  segmentB: number;
}

interface Segments {
  x0: Float64Array;
  y0: Float64Array;
  x1: Float64Array;
  y1: Float64Array;
  /** Index into the rings given. */
  ring: Int32Array;
  /** Position of the edge within its ring once repeated positions are dropped. */
  order: Int32Array;
  /** Index of the edge's first position in the ring as given. */
  start: Int32Array;
  /** Edges per ring once repeated positions are dropped. */
  ringEdges: number[];
}

function collectSegments(rings: readonly RingInput[]): Segments {
  const total = rings.reduce((sum, r) => sum + r.flat.length / 2, 0);
  const s: Segments = {
    x0: new Float64Array(total), y0: new Float64Array(total), x1: new Float64Array(total), y1: new Float64Array(total),
    ring: new Int32Array(total), order: new Int32Array(total), start: new Int32Array(total), ringEdges: [],
  };
  let n = 0;
  rings.forEach(({ flat }, r) => {
    // A repeated position adds an edge of length zero, harmless to containment but it would
    // "touch" its neighbours here; the edges are those between distinct consecutive positions.
    const kept: number[] = [];
    const count = flat.length / 2 - 1;
    for (let i = 0; i < count; i++) {
      const last = kept[kept.length - 1];
      if (last === undefined || flat[2 * i] !== flat[2 * last] || flat[2 * i + 1] !== flat[2 * last + 1]) kept.push(i);
    }
    while (kept.length > 1 && flat[2 * kept[kept.length - 1]!] === flat[0] && flat[2 * kept[kept.length - 1]! + 1] === flat[1]) kept.pop();
    kept.forEach((i, k) => {
      const j = kept[(k + 1) % kept.length]!;
      s.x0[n] = flat[2 * i]!; s.y0[n] = flat[2 * i + 1]!; s.x1[n] = flat[2 * j]!; s.y1[n] = flat[2 * j + 1]!;
      s.ring[n] = r; s.order[n] = k; s.start[n] = i;
      n++;
    });
    s.ringEdges.push(kept.length);
  });
  return {
    x0: s.x0.subarray(0, n), y0: s.y0.subarray(0, n), x1: s.x1.subarray(0, n), y1: s.y1.subarray(0, n),
    ring: s.ring.subarray(0, n), order: s.order.subarray(0, n), start: s.start.subarray(0, n), ringEdges: s.ringEdges,
  };
}

function orient(ax: number, ay: number, bx: number, by: number, cx: number, cy: number): number {
  return (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
}

/** Whether (px, py), known to be collinear with the segment, lies within its box. */
function within(ax: number, ay: number, bx: number, by: number, px: number, py: number): boolean {
  return Math.min(ax, bx) <= px && px <= Math.max(ax, bx) && Math.min(ay, by) <= py && py <= Math.max(ay, by);
}

/** 2: the edges cross at a point inside both; 1: they touch or overlap; 0: they do not meet. */
function meet(s: Segments, a: number, b: number): 0 | 1 | 2 {
  const ax = s.x0[a]!, ay = s.y0[a]!, bx = s.x1[a]!, by = s.y1[a]!;
  const cx = s.x0[b]!, cy = s.y0[b]!, dx = s.x1[b]!, dy = s.y1[b]!;
  if (Math.max(ax, bx) < Math.min(cx, dx) || Math.max(cx, dx) < Math.min(ax, bx)) return 0;
  if (Math.max(ay, by) < Math.min(cy, dy) || Math.max(cy, dy) < Math.min(ay, by)) return 0;
  const d1 = orient(cx, cy, dx, dy, ax, ay);
  const d2 = orient(cx, cy, dx, dy, bx, by);
  const d3 = orient(ax, ay, bx, by, cx, cy);
  const d4 = orient(ax, ay, bx, by, dx, dy);
  if (((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0))) return 2;
  if (d1 === 0 && within(cx, cy, dx, dy, ax, ay)) return 1;
  if (d2 === 0 && within(cx, cy, dx, dy, bx, by)) return 1;
  if (d3 === 0 && within(ax, ay, bx, by, cx, cy)) return 1;
  if (d4 === 0 && within(ax, ay, bx, by, dx, dy)) return 1;
  return 0;
}

/**
 * Whether two edges meet where the rules forbid: edges of one ring that are not neighbours must
 * not meet at all; neighbours share a position and must not fold back over each other; edges of
 * different rings must not cross (touching at a point is allowed, as in the OGC simple features
 * rules for holes).
 */
function forbidden(s: Segments, a: number, b: number): boolean {
  if (s.ring[a] !== s.ring[b]) return meet(s, a, b) === 2;
  const edges = s.ringEdges[s.ring[a]!]!;
  const oa = s.order[a]!, ob = s.order[b]!;
  const first = (oa + 1) % edges === ob ? a : (ob + 1) % edges === oa ? b : -1;
  if (first === -1) return meet(s, a, b) !== 0;
  const second = first === a ? b : a;
  // Neighbours P→Q and Q→R: a fold is R back along the line of P→Q.
  const px = s.x0[first]!, py = s.y0[first]!, qx = s.x1[first]!, qy = s.y1[first]!, rx = s.x1[second]!, ry = s.y1[second]!;
  return orient(px, py, qx, qy, rx, ry) === 0 && (qx - px) * (rx - qx) + (qy - py) * (ry - qy) < 0;
}

/** The first forbidden meeting of edges among a polygon's rings, if any. */
export function findCrossing(rings: readonly RingInput[]): Crossing | undefined {
  const s = collectSegments(rings);
  const n = s.x0.length;
  // Edges in order of their west end, copied in that order into flat arrays for the inner loop.
  const order = Int32Array.from(Array.from({ length: n }, (_, i) => i).sort((a, b) => Math.min(s.x0[a]!, s.x1[a]!) - Math.min(s.x0[b]!, s.x1[b]!)));
  const ax = new Float64Array(n), ay = new Float64Array(n), bx = new Float64Array(n), by = new Float64Array(n);
  const west = new Float64Array(n), east = new Float64Array(n), south = new Float64Array(n), north = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    const i = order[k]!;
    ax[k] = s.x0[i]!; ay[k] = s.y0[i]!; bx[k] = s.x1[i]!; by[k] = s.y1[i]!;
    west[k] = Math.min(ax[k]!, bx[k]!); east[k] = Math.max(ax[k]!, bx[k]!);
    south[k] = Math.min(ay[k]!, by[k]!); north[k] = Math.max(ay[k]!, by[k]!);
  }
  for (let k = 0; k < n; k++) {
    const reach = east[k]!, low = south[k]!, high = north[k]!;
    const px = ax[k]!, py = ay[k]!, dx = bx[k]! - px, dy = by[k]! - py;
    // Only edges starting west of this one's east end can meet it.
    for (let m = k + 1; m < n && west[m]! <= reach; m++) {
      if (north[m]! < low || south[m]! > high) continue;
      // Both ends strictly on one side of this edge's line: they cannot meet.
      const sideA = dx * (ay[m]! - py) - dy * (ax[m]! - px);
      const sideB = dx * (by[m]! - py) - dy * (bx[m]! - px);
      if ((sideA > 0 && sideB > 0) || (sideA < 0 && sideB < 0)) continue;
      const a = Math.min(order[k]!, order[m]!), b = Math.max(order[k]!, order[m]!);
      if (forbidden(s, a, b)) {
        return { ringA: rings[s.ring[a]!]!.ring, segmentA: s.start[a]!, ringB: rings[s.ring[b]!]!.ring, segmentB: s.start[b]! };
      }
    }
  }
  return undefined;
}
