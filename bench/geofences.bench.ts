// Geofence evaluation: which of N geofences hold a located record, on one core, for N from 100 to
// 100,000 (half circles, half 50-vertex polygons) over 30 km × 30 km of Berlin. Two layouts:
// "fixed sizes" keeps each geofence 25 to 250 m across whatever N, so a point lies in more of them
// as N grows (the answer itself grows); "same coverage" shrinks them as N grows so a point has the
// same expected number of candidates, which isolates the cost of the index's depth. Also times
// the validation of 10,000-position rings. `npm run bench -- geofences`.
//
// Times are this process's CPU time (user + system), not wall time: "per core" is what is asked,
// and on a shared machine wall time also counts the time other processes held the core.
import { createGeofenceIndex } from '../src/geofences/spatial-index.ts';
import { validateGeometry } from '../src/geofences/validation.ts';
import { median } from './lib.ts';
import { CENTER, HALF_SIDE_M, at, cityGeofence, seeded } from './city.ts';

const SIZES = [100, 1000, 10_000, 100_000];
const POINTS = 200_000;
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

const random = seeded(1);
const anywhere = () => at((random() * 2 - 1) * HALF_SIDE_M, (random() * 2 - 1) * HALF_SIDE_M);
// Scaled, for the runs that keep each point's candidates the same as the count grows.
const geofence = (i: number, scale: number) => cityGeofence(i, random, 25 * scale, 225 * scale);

const xs = new Float64Array(POINTS), ys = new Float64Array(POINTS);
for (let i = 0; i < POINTS; i++) [xs[i], ys[i]] = anywhere();

interface Row { size: number; buildMs: number; perSecond: number; nsPerLookup: number; candidates: number; hits: number }

function measure(size: number, scale: number): Row {
  const index = createGeofenceIndex();
  const started = cpuMs();
  for (let i = 0; i < size; i++) index.set(`gf-${i}`, geofence(i, scale));
  index.containing(CENTER[0], CENTER[1]); // the first lookup builds the tree
  const buildMs = cpuMs() - started;
  let candidates = 0;
  for (let i = 0; i < 20_000; i++) candidates += index.candidates(xs[i]!, ys[i]!).length;
  let hits = 0;
  const rounds: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    hits = 0;
    const t0 = cpuMs();
    for (let i = 0; i < POINTS; i++) hits += index.containing(xs[i]!, ys[i]!).length;
    rounds.push(cpuMs() - t0);
  }
  const ms = median(rounds);
  return { size, buildMs, perSecond: (POINTS / ms) * 1000, nsPerLookup: (ms * 1e6) / POINTS, candidates: candidates / 20_000, hits: hits / POINTS };
}

function table(title: string, rows: Row[]): void {
  console.log(`\n${title}\n`);
  console.log('| geofences | build ms | lookups/s (1 core) | ns/lookup | candidates/lookup | inside/lookup | cost × vs previous (N × 10) |');
  console.log('|---|---|---|---|---|---|---|');
  rows.forEach((r, i) => {
    const growth = i === 0 ? '' : `${(r.nsPerLookup / rows[i - 1]!.nsPerLookup).toFixed(2)} ×`;
    console.log(`| ${r.size} | ${r.buildMs.toFixed(0)} | ${Math.round(r.perSecond).toLocaleString('en-US')} | ${r.nsPerLookup.toFixed(0)} | ${r.candidates.toFixed(2)} | ${r.hits.toFixed(2)} | ${growth} |`);
  });
}

const fixed = SIZES.map((size) => measure(size, 1));
// Area per geofence shrinks as 1/N: candidates per point stay near those of 1,000 fixed-size ones.
const covered = SIZES.map((size) => measure(size, Math.sqrt(1000 / size)));
console.log(`Node ${process.version}; ${POINTS} located points; median of ${ROUNDS} rounds; CPU time of this process`);
table('Fixed sizes (25-250 m radius): the answer grows with N', fixed);
table('Same coverage (sizes shrink as 1/sqrt(N)): the index depth alone', covered);
const first = covered[0]!, last = covered[covered.length - 1]!;
console.log(`\nSame coverage, ${first.size} → ${last.size} geofences (${last.size / first.size} ×): ${(last.nsPerLookup / first.nsPerLookup).toFixed(2)} × the cost per lookup; log ratio ${(Math.log(last.size) / Math.log(first.size)).toFixed(2)} ×`);
const tenThousand = fixed.find((r) => r.size === 10_000)!;
console.log(`Goal >= 1,000,000 lookups/s against 10,000 geofences (fixed sizes): ${Math.round(tenThousand.perSecond).toLocaleString('en-US')} → ${tenThousand.perSecond >= 1e6 ? 'met' : 'NOT met'}`);

// Validation of the largest rings allowed.
const circleRing = Array.from({ length: 9999 }, (_, k) => at(5000 * Math.cos((2 * Math.PI * k) / 9999), 5000 * Math.sin((2 * Math.PI * k) / 9999)));
const starRing = Array.from({ length: 9999 }, (_, k) => {
  const r = k % 2 === 0 ? 10_000 : 20;
  return at(r * Math.cos((2 * Math.PI * k) / 9999), r * Math.sin((2 * Math.PI * k) / 9999));
});
console.log('\n| 10,000-position ring | validation ms (median of 9) | valid |\n|---|---|---|');
for (const [name, ring] of [['circle-like (short edges)', circleRing], ['star of 5,000 thin spikes (worst case)', starRing]] as const) {
  const g = { type: 'Polygon', coordinates: [[...ring, ring[0]!]] };
  const times: number[] = [];
  let ok = false;
  for (let i = 0; i < 9; i++) {
    const t0 = cpuMs();
    ok = validateGeometry(g).ok;
    times.push(cpuMs() - t0);
  }
  console.log(`| ${name} | ${median(times).toFixed(1)} | ${ok} |`);
}
