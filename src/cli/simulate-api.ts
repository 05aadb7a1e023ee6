// The simulator's calls to the Fleet API, all through the SDK (@fleet/sdk): the reachability
// check, where the service's devices send, the vehicles and geofences it sets up, and the HTTP
// transport (a batch per tick, POST /v2/telemetry). The device protocols and MQTT are elsewhere:
// they are not the API.
import { setTimeout as sleep } from 'node:timers/promises';
import { type FleetClient, type Schemas, createFleetClient, FleetApiError, parseRetryAfter } from '@fleet/sdk';
import type { Counters } from './simulate-devices.ts';
import { PROFILES, type Resume, type SimType, type Sample, type VehicleState, createVehicle, geofencesOnRoutes, typeFor } from './simulation.ts';

const MAX_BATCH = 1000;
const MAX_IN_FLIGHT = 8;
const REQUEST_TIMEOUT_MS = 10_000;
/** A setup of many vehicles may meet the rate limit many times over: it waits each one out. */
const SETUP_ATTEMPTS = 21;

/** An error for the user: printed, and the simulator exits 1. */
export class Fatal extends Error {}

/** A URL as printed: without any credentials in it. */
export function shown(url: string): string {
  const parsed = new URL(url);
  parsed.username = '';
  parsed.password = '';
  return parsed.toString().replace(/\/$/, '');
}

function causeOf(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}

/** `403 insufficient-scope - <detail>` from an answer's status and body (a problem, or text). */
function problemText(status: number, body: unknown): string {
  const fields = typeof body === 'object' && body !== null ? (body as { code?: unknown; detail?: unknown }) : {};
  const detail = typeof fields.detail === 'string' ? fields.detail : typeof body === 'string' && body !== '' ? body.slice(0, 200) : undefined;
  return [status, typeof fields.code === 'string' ? fields.code : undefined, detail === undefined ? undefined : `- ${detail}`]
    .filter((part) => part !== undefined)
    .join(' ');
}

function codeOf(body: unknown): string | undefined {
  const code = typeof body === 'object' && body !== null ? (body as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : undefined;
}

export interface Api {
  /** For setup: rate limits (and 503s where safe) waited out; a refused key throws a Fatal. */
  setup: FleetClient;
  /**
   * One attempt per call: telemetry, whose records are skipped rather than queued while the
   * service pushes back (a retry would hold a batch that the next ticks make stale), and the
   * reachability check, which must answer at once.
   */
  once: FleetClient;
}

export function connect(url: string, key: string): Api {
  const setup = createFleetClient({
    baseUrl: url,
    apiKey: key,
    retry: { attempts: SETUP_ATTEMPTS, maxDelayMs: 60_000 },
    // Each attempt has its own deadline; the waits between them are the service's to set.
    fetch: (request, init) => fetch(request, { ...init, signal: AbortSignal.any([request.signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]) }),
  });
  setup.use({
    async onResponse({ response }) {
      if (response.status !== 401) return undefined;
      const text = await response.clone().text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON: the text is shown as it is
      }
      throw new Fatal(`the service refused the key (${problemText(401, body)}). Set FLEET_KEY or --key to a valid API key.`);
    },
  });
  return { setup, once: createFleetClient({ baseUrl: url, apiKey: key, retry: false }) };
}

export async function checkReachable(api: Api, url: string): Promise<void> {
  let status: number;
  try {
    ({ response: { status } } = await api.once.GET('/healthz', { signal: AbortSignal.timeout(5000) }));
  } catch (error) {
    throw new Fatal(`cannot reach Fleet at ${shown(url)} (${causeOf(error)}). Is the service running (npm start)? Or pass --url.`);
  }
  if (status !== 200) throw new Fatal(`${url}/healthz answered ${status}: is that a Fleet service?`);
}

export type DeviceEndpoints = Schemas['DeviceEndpoints'];

/**
 * Where the service's devices send, as it says (GET /v2/device-endpoints): its own listeners on
 * the ports they bound, or the broker it subscribes to; or why it did not say (a key without
 * telemetry:write, a service that does not know the route). A refused key is a Fatal.
 */
export async function deviceEndpoints(api: Api, url: string): Promise<{ endpoints: DeviceEndpoints } | { unanswered: string }> {
  let answer;
  try {
    answer = await api.setup.GET('/v2/device-endpoints');
  } catch (error) {
    if (error instanceof Fatal) throw error;
    throw new Fatal(`cannot reach Fleet at ${shown(url)} (${causeOf(error)}) to ask where devices send.`);
  }
  const { data, error, response } = answer;
  if (data !== undefined) return { endpoints: data };
  if (response.status === 403) return { unanswered: 'the key may not ask where devices send (GET /v2/device-endpoints needs the telemetry:write scope)' };
  return { unanswered: `the service at ${shown(url)} did not say where devices send (GET /v2/device-endpoints: ${problemText(response.status, error)})` };
}

async function pool<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

export interface Sim {
  state: VehicleState;
  /** Wall-clock ms of the state: the timestamp of its last record. */
  at: number;
  /** Deleted or retired meanwhile: skipped. */
  dropped: boolean;
}

/** A failed page of a list: its answer's status and problem, or the error as it came (a Fatal, a network failure). */
function pageFailure(error: unknown): { status: number; problem: unknown } {
  if (error instanceof FleetApiError) return { status: error.status, problem: error.problem };
  throw error;
}

/**
 * Lists the vehicles already there (when the key may read the fleet), registers the rest, and
 * reads each existing vehicle's latest telemetry to resume from it (when the key may).
 */
/** Vehicles registered per request (the most a batch registration takes). */
const REGISTRATION_BATCH = 1000;
/**
 * How many vehicles (the first ones) have a driver-identification reader: each has two or three
 * drivers, registered a request each, so a large fleet's setup stays a few hundred requests.
 */
export const DRIVER_READERS = 100;

export async function prepareVehicles(
  api: Api, options: { vehicles: number; prefix: string; seed: number; progress?: (line: string) => void },
): Promise<{ sims: Sim[]; created: number }> {
  const ids = Array.from({ length: options.vehicles }, (_, i) => `${options.prefix}-${String(i + 1).padStart(4, '0')}`);
  const wanted = new Set(ids);
  let existing: Set<string> | undefined = new Set();
  const withTelemetry = new Set<string>();
  const retired = new Set<string>();
  /** Existing vehicles keep their registered type, when the model knows it. */
  const types = new Map<string, SimType>();
  try {
    for await (const item of api.setup.paginate.vehicles({ limit: 1000 })) {
      if (!wanted.has(item.id)) continue;
      existing.add(item.id);
      if (item.status === 'retired') retired.add(item.id);
      if (Object.hasOwn(PROFILES, item.type)) types.set(item.id, item.type as SimType);
      if (item.lastUpdate !== null) withTelemetry.add(item.id);
    }
  } catch (error) {
    const { status, problem } = pageFailure(error);
    if (status !== 403) throw new Fatal(`listing vehicles failed: ${problemText(status, problem)}`);
    existing = undefined; // cannot read the fleet: try registering every one
  }

  let created = 0;
  const missing = ids.filter((id) => existing === undefined || !existing.has(id));
  // A request per REGISTRATION_BATCH vehicles (a fleet of thousands costs a few requests of the
  // key's rate limit, not thousands), saying how far it got when there are several.
  for (let at = 0; at < missing.length; at += REGISTRATION_BATCH) {
    const chunk = missing.slice(at, at + REGISTRATION_BATCH);
    const { data, error, response } = await api.setup.POST('/v2/fleet/vehicles/batch', {
      body: { vehicles: chunk.map((id) => ({ vehicleId: id, type: typeFor(ids.indexOf(id)), configuration: { sensors: ['gps', 'imu'] } })) },
    });
    if (data === undefined) {
      if (response.status === 403 && codeOf(error) === 'insufficient-scope') {
        throw new Fatal(`the key may not register vehicles (it needs the fleet:write scope): ${problemText(response.status, error)}`);
      }
      throw new Fatal(`registering vehicles ${chunk[0]} to ${chunk.at(-1)} failed: ${problemText(response.status, error)}`);
    }
    created += data.created;
    for (const v of data.vehicles) if (v.outcome === 'exists') withTelemetry.add(v.id);
    if (missing.length > REGISTRATION_BATCH) options.progress?.(`registered ${Math.min(at + REGISTRATION_BATCH, missing.length)} of ${missing.length} vehicles`);
  }

  const resume = new Map<string, Resume>();
  let mayRead = true;
  await pool([...withTelemetry], 8, async (id) => {
    if (!mayRead) return;
    const { data, response } = await api.setup.GET('/v2/telemetry/{vehicleId}', {
      params: { path: { vehicleId: id }, query: { fields: 'location,battery,temperature,odometer' } },
    });
    if (response.status === 403) mayRead = false;
    if (data === undefined) return;
    const { location, battery, odometer, temperature } = data.data;
    resume.set(id, { location, battery, odometer, temperature });
  });

  const now = Date.now();
  const sims = ids.map((id, i): Sim => {
    const state = createVehicle(id, types.get(id) ?? typeFor(i), { seed: options.seed, resume: resume.get(id) });
    // Readers in the first vehicles only: their drivers are registered one request each.
    if (i >= DRIVER_READERS) state.drivers = [];
    return { state, at: now, dropped: retired.has(id) };
  });
  if (retired.size > 0) process.stdout.write(`fleet-simulate: skipping retired ${[...retired].join(', ')}\n`);
  if (sims.every((sim) => sim.dropped)) throw new Fatal('every vehicle to simulate is retired; pick another --prefix.');
  return { sims, created };
}

/**
 * Places `options.geofences` geofences on the routes, just ahead of the vehicles (see
 * geofencesOnRoutes). Those of the same names from an earlier run are reused: their shapes are
 * replaced (same ids), since the vehicles have moved on since.
 */
export async function prepareGeofences(
  api: Api, options: { geofences: number; prefix: string; rate: number }, sims: readonly Sim[],
): Promise<{ created: number; reused: number }> {
  const driving = sims.filter((sim) => !sim.dropped).map((sim) => sim.state);
  const wanted = geofencesOnRoutes(driving, options.geofences, { prefix: options.prefix, secondsBetweenRecords: driving.length / options.rate });
  const names = new Set(wanted.map((g) => g.name));
  const existing = new Map<string, string>();
  const refused = (status: number, problem: unknown) =>
    new Fatal(`the key may not manage geofences (--geofences needs the fleet:read and rules scopes): ${problemText(status, problem)}`);
  try {
    for await (const item of api.setup.paginate.geofences({ limit: 1000 })) {
      if (names.has(item.name) && !existing.has(item.name)) existing.set(item.name, item.id);
    }
  } catch (error) {
    const { status, problem } = pageFailure(error);
    throw status === 403 ? refused(status, problem) : new Fatal(`listing geofences failed: ${problemText(status, problem)}`);
  }
  let created = 0;
  let reused = 0;
  await pool(wanted, 8, async ({ name, geometry }) => {
    const id = existing.get(name);
    const { error, response } = id === undefined
      ? await api.setup.POST('/v2/geofences', { body: { name, geometry } })
      : await api.setup.PUT('/v2/geofences/{id}', { params: { path: { id } }, body: { name, geometry } });
    if (response.status === 403) throw refused(response.status, error);
    if (response.status !== (id === undefined ? 201 : 200)) {
      throw new Fatal(`${id === undefined ? 'creating' : 'moving'} geofence ${name} failed: ${problemText(response.status, error)}`);
    }
    if (id === undefined) created++;
    else reused++;
  });
  return { created, reused };
}

const FIRST_NAMES = ['Ada', 'Bruno', 'Chiara', 'Deniz', 'Elif', 'Farid', 'Greta', 'Hannes', 'Ines', 'Jonas', 'Kaja', 'Lukas', 'Mira', 'Noah', 'Olga', 'Pavel'];
const LAST_NAMES = ['Albers', 'Berger', 'Costa', 'Demir', 'Engel', 'Fischer', 'Graf', 'Haas', 'Ivanova', 'Jansen', 'Keller', 'Lang', 'Moreau', 'Nowak', 'Otto', 'Peters'];

/**
 * Registers the drivers whose iButtons the vehicles' readers send (simulation.ts, driverIButtons),
 * so their records start those drivers' assignments: one driver per iButton, named from it. One
 * registered by an earlier run is kept (409 identifier-taken). A key that may not create drivers
 * leaves them unknown (their records announce `driver.unknown`); the run goes on.
 */
export async function prepareDrivers(api: Api, sims: readonly Sim[]): Promise<{ created: number; refused: boolean }> {
  const iButtons = [...new Set(sims.filter((sim) => !sim.dropped).flatMap((sim) => sim.state.drivers))];
  let created = 0;
  let refused = false;
  await pool(iButtons, 8, async (value) => {
    if (refused) return;
    const n = Number.parseInt(value.slice(-4), 16);
    const name = `${FIRST_NAMES[n % FIRST_NAMES.length]!} ${LAST_NAMES[Math.floor(n / FIRST_NAMES.length) % LAST_NAMES.length]!} (${value.slice(-4)})`;
    const { error, response } = await api.setup.POST('/v2/drivers', { body: { name, identifiers: [{ kind: 'ibutton', value }] } });
    if (response.status === 201) created++;
    else if (response.status === 403) refused = true;
    else if (!(response.status === 409 && codeOf(error) === 'identifier-taken')) throw new Fatal(`registering the driver of ${value} failed: ${problemText(response.status, error)}`);
  });
  return { created, refused };
}

export interface OutRecord {
  vehicleId: string;
  timestamp: string;
  data: Sample;
}

export interface Transport {
  name: string;
  send(records: OutRecord[]): void;
  /** Waits (bounded) for what is in flight, then closes. */
  close(): Promise<void>;
}

export function httpTransport(
  api: Api,
  counters: Counters,
  on: { fatal(error: Fatal): void; refused(vehicleIds: string[], why: string): void },
): Transport {
  const inFlight = new Set<Promise<void>>();
  let pausedUntil = 0;

  async function post(records: OutRecord[]): Promise<void> {
    try {
      const { data, error, response } = await api.once.POST('/v2/telemetry', { body: { records }, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
      counters.failingSince = undefined;
      if (response.status === 202) {
        counters.accepted += data?.accepted ?? 0;
        counters.duplicates += data?.duplicates ?? 0;
        return;
      }
      const { status } = response;
      const code = codeOf(error);
      counters.errors += records.length;
      counters.lastError = problemText(status, error);
      if (status === 401) on.fatal(new Fatal(`the service refused the key (${problemText(status, error)}).`));
      if (code === 'vehicle-not-found' || code === 'vehicle-retired') {
        // A batch is all or nothing: a vehicle deleted or retired meanwhile must leave the rotation.
        const { detail } = error as { detail?: unknown };
        const named = [...(typeof detail === 'string' ? detail : '').matchAll(/"([^"]+)"/g)].map((m) => m[1]!);
        on.refused(named, code);
      }
      if (status === 429) {
        // Back off as told; records made meanwhile are skipped, not queued.
        const asked = parseRetryAfter(response.headers.get('retry-after'));
        const waitMs = asked === undefined || asked <= 0 ? 1000 : Math.min(asked, 60_000);
        pausedUntil = Date.now() + waitMs;
        counters.lastError = `rate limited; pausing ${waitMs / 1000} s (lower --rate, raise --tick, or raise FLEET_RATE_LIMIT_REQUESTS)`;
      }
    } catch (error) {
      counters.errors += records.length;
      counters.lastError = `request failed: ${causeOf(error)}`;
      counters.failingSince ??= Date.now();
    }
  }

  return {
    name: 'HTTP',
    send(records) {
      for (let i = 0; i < records.length; i += MAX_BATCH) {
        const chunk = records.slice(i, i + MAX_BATCH);
        if (Date.now() < pausedUntil || inFlight.size >= MAX_IN_FLIGHT) {
          counters.skipped += chunk.length;
          continue;
        }
        counters.sent += chunk.length;
        const request = post(chunk).finally(() => inFlight.delete(request));
        inFlight.add(request);
      }
    },
    async close() {
      await Promise.race([Promise.allSettled([...inFlight]), sleep(5000)]);
    },
  };
}
