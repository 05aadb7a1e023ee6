// Telemetry rules: ingest (validate, commit, keep the latest state in step), latest, history.
// Knows nothing of HTTP or MQTT: every path calls the same functions.
import type { Counter, Histogram, Registry } from 'prom-client';
import { counterIn, histogramIn } from '../metric.ts';
import type { Clock } from '../clock.ts';
import type { EventPort } from '../events/port.ts';
import type { CommitRules } from '../rules/store.ts';
import { AppError } from '../errors.ts';
import type { VehicleStore } from '../vehicles/store.ts';
import type { Principal } from '../auth/scopes.ts';
import type { VehicleScope } from '../groups/scope.ts';
import { type LatestView, latestData, mergeLatest } from './latest.ts';
import { HISTORY_LIMIT_DEFAULT, type HistoryQuery, TELEMETRY_FIELDS, type TelemetryField } from './schema.ts';
import type { StoredRecord, TelemetryStore } from './store.ts';
import { fleetRecords, vehicleRecords } from './validate.ts';
import type { Tracing } from '../tracing/tracing.ts';
import { createGroupCommitter } from './writer.ts';

export type TelemetryService = ReturnType<typeof createTelemetryService>;

/** How records reached the service; every path ingests through this service, so all are counted here. */
export const TELEMETRY_SOURCES = ['http', 'mqtt', 'osmand', 'teltonika'] as const;
export type TelemetrySource = (typeof TELEMETRY_SOURCES)[number];

function recordsCounter(registry: Registry): Counter<'source' | 'outcome'> {
  const counter = counterIn(registry, {
    name: 'fleet_telemetry_records_total', help: 'Telemetry records committed, by source and outcome (accepted: stored; duplicate: already stored).',
    labelNames: ['source', 'outcome'],
  });
  for (const source of TELEMETRY_SOURCES) for (const outcome of ['accepted', 'duplicate']) counter.inc({ source, outcome }, 0);
  return counter;
}

/** How long each group commit took: what every acknowledgement of telemetry waits for. */
function commitHistogram(registry: Registry): Histogram {
  return histogramIn(registry, {
    name: 'fleet_telemetry_commit_duration_seconds',
    help: 'Time one group commit of telemetry took (every request waiting in the group waits for it), failed ones included.',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  });
}

export function createTelemetryService(deps: {
  store: TelemetryStore;
  vehicles: VehicleStore;
  latest: LatestView;
  clock: Clock;
  /** Told of each commit (`telemetry`: its records and the merged latest states) and the events it recorded (`recorded`). */
  events?: EventPort;
  /** Judges records against geofences and alert rules in the commit (rules/engine.ts). */
  rules?: { prepare(organizationId: string): Promise<unknown> | undefined; commitRules: CommitRules };
  /** Where fleet_telemetry_records_total and the commit latency are counted. */
  registry?: Registry;
  /** Which vehicles a credential limited to groups may send for. */
  scope?: VehicleScope;
  /** Traces each request's wait for its commit. */
  tracing?: Tracing;
}) {
  const { store, latest, clock, events } = deps;
  const commits = deps.registry === undefined ? undefined : commitHistogram(deps.registry);
  const writer = createGroupCommitter(store, mergeLatest, deps.rules?.commitRules, commits === undefined ? undefined : (seconds) => commits.observe(seconds), deps.tracing);
  const counted = deps.registry === undefined ? undefined : recordsCounter(deps.registry);

  async function commit(organizationId: string, records: StoredRecord[], source: TelemetrySource, who?: Principal) {
    // A credential limited to groups sends only for the vehicles in them; another is missing to it.
    if (who?.groupIds !== undefined) await deps.scope?.assertSees(who, records.map((record) => record.vehicleId));
    // The organization's rules must be in memory before the commit judges inside its transaction.
    const preparing = deps.rules?.prepare(organizationId);
    if (preparing !== undefined) await preparing;
    const at = clock.now();
    const outcome = await writer.submit({ organizationId, records, at });
    if (!outcome.ok) {
      const [code, what] = outcome.reason === 'vehicle-not-found'
        ? (['vehicle-not-found', 'No such vehicle in this organization'] as const)
        : (['vehicle-retired', 'Retired vehicles take no telemetry'] as const);
      throw new AppError(code, `${what}: ${outcome.vehicleIds.map((id) => `"${id}"`).join(', ')}. Nothing was stored.`);
    }
    if (counted !== undefined) {
      if (outcome.accepted > 0) counted.inc({ source, outcome: 'accepted' }, outcome.accepted);
      if (outcome.duplicates > 0) counted.inc({ source, outcome: 'duplicate' }, outcome.duplicates);
    }
    const states = outcome.latest.map((state) => latest.merge(state));
    if (outcome.events.length > 0) events?.emit('recorded', { events: outcome.events });
    events?.emit('telemetry', { organizationId, records, states });
    return { accepted: outcome.accepted, duplicates: outcome.duplicates };
  }

  /**
   * One record or `{records}` for one vehicle: HTTP's per-vehicle route, MQTT, and the device
   * protocols, which build these records from what their devices send.
   */
  function ingestForVehicle(organizationId: string, vehicleId: string, body: unknown, source: TelemetrySource = 'http', who?: Principal) {
    return commit(organizationId, vehicleRecords(vehicleId, body, clock.now()), source, who);
  }

  /** `{records}` for many vehicles. */
  function ingestForFleet(organizationId: string, body: unknown, source: TelemetrySource = 'http', who?: Principal) {
    return commit(organizationId, fleetRecords(body, clock.now()), source, who);
  }

  async function requireVehicle(organizationId: string, vehicleId: string) {
    if ((await deps.vehicles.get(organizationId, vehicleId)) === undefined) {
      throw new AppError('vehicle-not-found', `No vehicle "${vehicleId}" in this organization.`);
    }
  }

  /** The latest state. Served from memory; the store is asked only to tell 404s apart. */
  async function latestFor(organizationId: string, vehicleId: string, fields: string | undefined) {
    const only = parseFields(fields);
    const state = latest.get(organizationId, vehicleId);
    if (state === undefined) {
      await requireVehicle(organizationId, vehicleId);
      throw new AppError('no-telemetry', `Vehicle "${vehicleId}" has sent no telemetry yet.`);
    }
    return { vehicleId, timestamp: state.timestamp, data: latestData(state, only) };
  }

  async function history(organizationId: string, vehicleId: string, query: HistoryQuery) {
    const only = parseFields(query.fields);
    const from = query.from === undefined ? 0 : Date.parse(query.from);
    const to = query.to === undefined ? Number.MAX_SAFE_INTEGER : Date.parse(query.to);
    if (from >= to) {
      throw new AppError('validation-failed', '`from` must be before `to`.', {
        errors: [{ in: 'query', path: '/from', message: 'must be before to' }],
      });
    }
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
    const limit = query.limit ?? HISTORY_LIMIT_DEFAULT;
    await requireVehicle(organizationId, vehicleId);
    const page = await store.history(organizationId, vehicleId, { from, to, after, limit: limit + 1 });
    const more = page.length > limit;
    const records = more ? page.slice(0, limit) : page;
    return {
      vehicleId,
      records: records.map((r) => ({ vehicleId, timestamp: r.timestamp, data: only === undefined ? r.data : pick(r.data, only) })),
      nextCursor: more ? encodeCursor(records.at(-1)!.timestamp) : null,
    };
  }

  /** Reads every vehicle's latest state from the store (at start, and after a cluster bus outage). */
  async function load() {
    const since = latest.mark();
    latest.reload(await store.loadLatest(), since);
  }

  return { ingestForVehicle, ingestForFleet, latestFor, history, load, drain: () => writer.drain() };
}

function parseFields(fields: string | undefined): TelemetryField[] | undefined {
  if (fields === undefined) return undefined;
  const names = [...new Set(fields.split(','))];
  const unknown = names.filter((name) => !(TELEMETRY_FIELDS as readonly string[]).includes(name));
  if (unknown.length > 0) {
    const message = `unknown field ${unknown.map((n) => `"${n}"`).join(', ')}; allowed: ${TELEMETRY_FIELDS.join(', ')}`;
    throw new AppError('validation-failed', `fields: ${message}.`, { errors: [{ in: 'query', path: '/fields', message }] });
  }
  return names as TelemetryField[];
}

function pick(data: StoredRecord['data'], only: readonly TelemetryField[]): StoredRecord['data'] {
  const out: Record<string, unknown> = {};
  for (const field of only) if (data[field] !== undefined) out[field] = data[field];
  return out;
}

// The cursor is opaque to clients: today the timestamp of the last record of the page.
function encodeCursor(timestamp: number): string {
  return Buffer.from(`t:${timestamp}`).toString('base64url');
}

function decodeCursor(cursor: string): number {
  const match = /^t:(\d{1,16})$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (match === null) {
    throw new AppError('validation-failed', 'The cursor is not one this service issued.', {
      errors: [{ in: 'query', path: '/cursor', message: 'is not a valid cursor' }],
    });
  }
  return Number(match[1]);
}
