// The telemetry the ingest benchmarks send, shared by the load generator (HTTP bodies) and the
// raw SQLite baseline (rows), so both write the same rows: request k goes to vehicle k mod V, and
// its records have the timestamps start + k * size + i, unique across a run.

/** A realistic record's `data`, varied over a pool of 1000 (stored as this exact JSON text). */
const DATA = Array.from({ length: 1000 }, (_, i) =>
  JSON.stringify({
    location: { lat: Math.round((52.45 + (i % 97) / 1000) * 1e6) / 1e6, lng: Math.round((13.3 + (i % 89) / 1000) * 1e6) / 1e6 },
    speed: (i * 7) % 90,
    heading: (i * 13) % 360,
    battery: 100 - (i % 80),
    temperature: 15 + (i % 20) / 2,
    odometer: 12_000 + i * 0.25,
  }),
);

export function dataText(i: number): string {
  return DATA[i % DATA.length]!;
}

export interface Plan {
  vehicles: readonly string[];
  /** Records per request (1 for single-record bodies). */
  size: number;
  /** Timestamp of the first record of the run, ms since the epoch. */
  start: number;
}

export function vehicleOf(plan: Plan, k: number): string {
  return plan.vehicles[k % plan.vehicles.length]!;
}

export function timestampOf(plan: Plan, k: number, i: number): number {
  return plan.start + k * plan.size + i;
}

/** `{records: [{timestamp, data}, ...]}` for request k, built as text (cheap for the generator). */
export function recordsBody(plan: Plan, k: number): string {
  const parts = new Array<string>(plan.size);
  for (let i = 0; i < plan.size; i++) {
    parts[i] = `{"timestamp":"${new Date(timestampOf(plan, k, i)).toISOString()}","data":${dataText(k * plan.size + i)}}`;
  }
  return `{"records":[${parts.join(',')}]}`;
}

/**
 * `{records: [{vehicleId, timestamp, data}, ...]}` for request k of the fleet route: record i of
 * it goes to vehicle (k * size + i) mod V, so one request spans many vehicles.
 */
export function fleetBody(plan: Plan, k: number): string {
  const parts = new Array<string>(plan.size);
  for (let i = 0; i < plan.size; i++) {
    const n = k * plan.size + i;
    parts[i] = `{"vehicleId":"${vehicleOf(plan, n)}","timestamp":"${new Date(timestampOf(plan, k, i)).toISOString()}","data":${dataText(n)}}`;
  }
  return `{"records":[${parts.join(',')}]}`;
}

/** `{timestamp, data}` for request k. */
export function singleBody(plan: Plan, k: number): string {
  return `{"timestamp":"${new Date(timestampOf(plan, k, 0)).toISOString()}","data":${dataText(k)}}`;
}

// Tracks: each vehicle driving as vehicles do, 12 m between its records, back and forth across
// 30 km × 30 km around 52.52, 13.40, with speed, battery and temperature drifting slowly. The
// pool above jumps 0.1 to 0.8 km between a vehicle's records, which crosses a geofence's edge on
// almost every record when there are many; a track crosses one every few hundred metres.
const TRACK_CENTER = [13.4, 52.52] as const;
const TRACK_HALF_M = 15_000;
const TRACK_STEP_M = 12;
const M_PER_DEG_LAT = 111_195;
const M_PER_DEG_LNG = M_PER_DEG_LAT * Math.cos((TRACK_CENTER[1] * Math.PI) / 180);

/** A triangle wave over [-TRACK_HALF_M, TRACK_HALF_M], and the sign of its slope at `m`. */
function bounce(m: number): [number, number] {
  const period = 4 * TRACK_HALF_M;
  const phase = ((m % period) + period) % period;
  return phase < 2 * TRACK_HALF_M ? [phase - TRACK_HALF_M, 1] : [3 * TRACK_HALF_M - phase, -1];
}

const round6 = (value: number) => Math.round(value * 1e6) / 1e6;

/** The `n`th record of vehicle number `v` of the run, as JSON text. */
export function trackDataText(v: number, n: number): string {
  const angle = ((v * 137.5) % 360) * (Math.PI / 180);
  const dx = Math.sin(angle), dy = Math.cos(angle);
  const [x, sx] = bounce(v * 977 + n * TRACK_STEP_M * dx);
  const [y, sy] = bounce(v * 1543 + n * TRACK_STEP_M * dy);
  const heading = Math.round(((Math.atan2(sx * dx, sy * dy) * 180) / Math.PI + 360) % 360);
  return JSON.stringify({
    location: { lat: round6(TRACK_CENTER[1] + y / M_PER_DEG_LAT), lng: round6(TRACK_CENTER[0] + x / M_PER_DEG_LNG) },
    speed: Math.round(45 + 45 * Math.sin((v + n) / 500)),
    heading: heading === 360 ? 0 : heading,
    battery: Math.round((100 - ((v * 7 + n / 50) % 80)) * 10) / 10,
    temperature: Math.round((20 + 5 * Math.sin((v + n) / 2000)) * 10) / 10,
    odometer: Math.round((12_000 + v * 10 + (n * TRACK_STEP_M) / 1000) * 1000) / 1000,
  });
}

/**
 * Request k of a track run: vehicle k mod V, carrying that vehicle's next `size` records (`{timestamp,
 * data}` when size is 1, else `{records: [...]}`); timestamps as timestampOf.
 */
export function trackBody(plan: Plan, k: number): string {
  const v = k % plan.vehicles.length;
  const first = Math.floor(k / plan.vehicles.length) * plan.size;
  if (plan.size === 1) return `{"timestamp":"${new Date(timestampOf(plan, k, 0)).toISOString()}","data":${trackDataText(v, first)}}`;
  const parts = new Array<string>(plan.size);
  for (let i = 0; i < plan.size; i++) {
    parts[i] = `{"timestamp":"${new Date(timestampOf(plan, k, i)).toISOString()}","data":${trackDataText(v, first + i)}}`;
  }
  return `{"records":[${parts.join(',')}]}`;
}
