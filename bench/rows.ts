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
