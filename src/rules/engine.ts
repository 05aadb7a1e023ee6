// The rule engine: judges each vehicle's newly stored records, in time order, against the
// geofences and alert rules of its organization, and feeds them to the live trip detection,
// inside the telemetry commit's transaction (the store calls `judge`). Definitions are kept in
// memory per organization, loaded before a commit needs them (`prepare`) and read again when they
// change here or on another node: only the geofences whose revision changed are read and
// prepared again (in chunks, a turn of the event loop each), and the index is updated in place.
import { iso } from '../clock.ts';
import { type EventRecord, newEvent } from '../events/types.ts';
import { newTimeOrderedId } from '../ids.ts';
import { DEFAULT_TRIP_SETTINGS, type TripEvent, advanceInPlace, copyTripState, initialTripState, tripView } from '../history/trips.ts';
import { type AlertRecord, type AlertRuleRecord, type Condition, type RuleState, type TriggerValue, appliesTo, emptyRuleState } from './model.ts';
import type { GeofenceRecord } from '../geofences/model.ts';
import type { GeofenceVersion } from '../geofences/store.ts';
import { type GeofenceIndex, createGeofenceIndex } from '../geofences/spatial-index.ts';
import { MAX_EVENTS_PER_BATCH, limitBatchEvents } from '../telemetry/store.ts';
import { type CompactGeometry, compactGeometry } from '../geofences/compact.ts';
import { type AlertChanges, type CommitRules, type DriverContext, type Judged, type RulesStore, identifierForms } from './store.ts';
import { advanceMeters, initialMeters } from '../meters/state.ts';
import { HOUR_MS, type TallyRow, countRecord, initialRollup, packTally, unpackTally } from '../reports/rollup.ts';
import { setImmediate as nextTurn } from 'node:timers/promises';

/** What judging needs of a geofence besides its shape (which only the index keeps). */
type GeofenceInfo = Pick<GeofenceRecord, 'name' | 'vehicleIds'> & { revision: number };

interface Definitions {
  geofences: Map<string, GeofenceInfo>;
  index: GeofenceIndex;
  /** Whether some geofence applies to listed vehicles only. */
  limitedGeofences: boolean;
  rules: AlertRuleRecord[];
  loadedAt: number;
  /** The organization's `version` when they were read. */
  version: number;
  /** The store's `definitionsStamp` read just before them. */
  stamp: string;
}

/** Definitions older than this are checked against the store (`definitionsStamp`) even without news of a change (a lost bus message). */
const REFRESH_MS = 30_000;

/**
 * Positions read and prepared in one turn of the event loop while loading (two of the largest
 * geofences), so that reading an organization's million positions (at start, or after the bus
 * was lost) holds up the other organizations' requests for one chunk at a time, not for the
 * whole read. Measured on one organization of 1,000,000 positions, on a 2-core host under load
 * from other work (load average about 15): read in one turn, the engine's first read took 9.9 s
 * and the first lookup after it 1.8 s more (the index's rebuild), and after one changed geofence
 * 6.2 s and 2.1 s again; in chunks, with only changed revisions read and the index updated in
 * place, the first read takes 6.1 s in all but no turn longer than 0.34 s, and after one change
 * 65 ms, the lookup 0.3 ms.
 */
const LOAD_CHUNK_POSITIONS = 20_000;
const LOAD_CHUNK_GEOFENCES = 500;

/** The versions in chunks of at most LOAD_CHUNK_POSITIONS positions (or one geofence) and LOAD_CHUNK_GEOFENCES geofences. */
function chunks(versions: readonly GeofenceVersion[]): string[][] {
  const out: string[][] = [];
  let chunk: string[] = [];
  let positions = 0;
  for (const v of versions) {
    if (chunk.length > 0 && (positions + v.vertices > LOAD_CHUNK_POSITIONS || chunk.length >= LOAD_CHUNK_GEOFENCES)) {
      out.push(chunk);
      chunk = [];
      positions = 0;
    }
    chunk.push(v.id);
    positions += v.vertices;
  }
  if (chunk.length > 0) out.push(chunk);
  return out;
}

/** An organization whose definitions are not in memory: only the trips are judged. */
const NONE: Definitions = { geofences: new Map(), index: createGeofenceIndex(), limitedGeofences: false, rules: [], loadedAt: -Infinity, version: -1, stamp: '' };

/**
 * `trips` (default true): every vehicle's records also feed the live trip detection, which emits
 * `trip.started` and `trip.ended` (docs/API.md "Trip events"). `meters` (default true): they keep
 * the vehicle's meters and its summary rollups (reports/rollup.ts) and tell who drives from the
 * identifiers they carry; only a benchmark turns it off, to measure what they cost.
 */
export function createRuleEngine(deps: { store: RulesStore; now?: () => number; trips?: boolean; meters?: boolean }) {
  const now = deps.now ?? Date.now;
  const trips = deps.trips ?? true;
  const meters = deps.meters ?? true;
  const every = { trips, meters };
  const cache = new Map<string, Definitions>();
  const loading = new Map<string, Promise<void>>();
  /** Records judged against their organization's geofences and rules (fleet_alert_evaluations_total). */
  const tally = { records: 0 };

  /** Changes of definitions heard of: of everyone's (a cluster resync), and per organization. */
  let everyone = 0;
  const changes = new Map<string, number>();
  const version = (organizationId: string) => everyone + (changes.get(organizationId) ?? 0);

  /**
   * Reads the organization's definitions, again if they changed while being read. Geofences whose
   * revision the copy in memory holds are kept; the others are read and prepared a chunk per turn
   * of the event loop, and only then is the index changed, in one step, so that no commit judges
   * against half of a change.
   */
  async function load(organizationId: string): Promise<void> {
    reading: for (;;) {
      const began = version(organizationId);
      const known = cache.get(organizationId);
      const stamp = await deps.store.definitionsStamp(organizationId);
      const [versions, rules] = await Promise.all([deps.store.geofenceVersions(organizationId), deps.store.allRules(organizationId)]);
      const stale = versions.filter((v) => known?.geofences.get(v.id)?.revision !== v.revision);
      const revisions = new Map(stale.map((v) => [v.id, v.revision]));
      const fresh = new Map<string, { info: GeofenceInfo; shape: CompactGeometry }>();
      for (const ids of chunks(stale)) {
        const records = await deps.store.geofencesById(organizationId, ids);
        if (began !== version(organizationId)) continue reading;
        for (const g of records) {
          // A revision read with the versions: a replacement since then is news on its way (a later load).
          fresh.set(g.id, { info: { name: g.name, vehicleIds: g.vehicleIds, revision: revisions.get(g.id)! }, shape: compactGeometry(g.geometry) });
        }
        await nextTurn();
      }
      if (began !== version(organizationId)) continue;
      const index = known?.index ?? createGeofenceIndex();
      const geofences = new Map<string, GeofenceInfo>();
      const current = new Set(versions.map((v) => v.id));
      for (const [id, info] of known?.geofences ?? []) {
        if (current.has(id)) geofences.set(id, info);
        else index.remove(id);
      }
      for (const [id, { info, shape }] of fresh) {
        geofences.set(id, info);
        index.set(id, shape);
      }
      // One deleted between the versions and its chunk: gone from the index as from the store.
      for (const { id } of stale) if (!fresh.has(id) && geofences.delete(id)) index.remove(id);
      cache.set(organizationId, {
        geofences,
        index,
        limitedGeofences: [...geofences.values()].some((g) => g.vehicleIds !== null),
        rules: rules.filter((r) => r.enabled),
        loadedAt: now(),
        version: began,
        stamp,
      });
      return;
    }
  }

  /** Definitions merely old: read again only if the store's stamp says they changed. */
  async function check(organizationId: string, known: Definitions): Promise<void> {
    const began = version(organizationId);
    const stamp = await deps.store.definitionsStamp(organizationId);
    if (stamp === known.stamp && began === known.version && began === version(organizationId)) known.loadedAt = now();
    else await load(organizationId);
  }

  /**
   * Makes sure the organization's definitions are in memory before a commit judges its records:
   * after a change, the commit waits for them to be read again. A copy that is merely old
   * (REFRESH_MS) serves while the store is asked whether it changed.
   */
  function prepare(organizationId: string): Promise<unknown> | undefined {
    const known = cache.get(organizationId);
    const changed = known === undefined || known.version !== version(organizationId);
    if (!changed && now() - known.loadedAt < REFRESH_MS) return undefined;
    let pending = loading.get(organizationId);
    if (pending === undefined) {
      pending = (changed ? load(organizationId) : check(organizationId, known)).finally(() => loading.delete(organizationId));
      loading.set(organizationId, pending);
    }
    return changed ? pending : undefined;
  }

  /**
   * The definitions changed here or on another node. The old copy stays for a commit already
   * prepared (it is judged as if it had been committed just before the change); the next one
   * waits for the new.
   */
  function forget(organizationId?: string): void {
    if (organizationId === undefined) everyone++;
    else changes.set(organizationId, (changes.get(organizationId) ?? 0) + 1);
  }

  const commitRules: CommitRules = {
    rollups: meters,
    judges(organizationId) {
      if (trips || meters) return true;
      const d = cache.get(organizationId);
      return d !== undefined && (d.geofences.size > 0 || d.rules.length > 0);
    },
    alerts(organizationId) {
      return (cache.get(organizationId)?.rules.length ?? 0) > 0;
    },
    judge(organizationId, vehicleId, records, state, unresolved, at, drivers) {
      const d = cache.get(organizationId);
      if (d === undefined && !trips && !meters) return undefined;
      return judgeRecords(d ?? NONE, every, organizationId, vehicleId, records, state, unresolved, at, tally, drivers);
    },
  };

  return {
    prepare, forget, commitRules,
    /** How many records have been judged so far (each against every rule and geofence that applies to it). */
    evaluations: () => tally.records,
  };
}

export type RuleEngine = ReturnType<typeof createRuleEngine>;

type Data = Record<string, unknown>;

/** `diagnostics.<key>` fields by their key, split once (a rule reads its field on every record). */
const diagnosticKeys = new Map<string, string | null>();

function fieldValue(data: Data, field: string): unknown {
  let key = diagnosticKeys.get(field);
  if (key === undefined) {
    key = field.startsWith('diagnostics.') ? field.slice('diagnostics.'.length) : null;
    if (diagnosticKeys.size < 10_000) diagnosticKeys.set(field, key);
  }
  // Own keys only: `diagnostics.constructor` must not read Object.prototype's function when the
  // record has no such key (the record then leaves the rule as it was).
  if (key === null) return Object.hasOwn(data, field) ? data[field] : undefined;
  const diagnostics = data.diagnostics as Data | undefined;
  return diagnostics !== undefined && Object.hasOwn(diagnostics, key) ? diagnostics[key] : undefined;
}

export function compare(value: unknown, op: string, threshold: unknown): boolean {
  if (typeof value === 'number' && typeof threshold === 'number') {
    switch (op) {
      case '>': return value > threshold;
      case '>=': return value >= threshold;
      case '<': return value < threshold;
      case '<=': return value <= threshold;
    }
  }
  if (op === '==') return value === threshold;
  if (op === '!=') return value !== threshold;
  return false;
}

/** The public form of an alert: what the API answers and what its events carry. */
export function alertView(a: AlertRecord) {
  return {
    id: a.id, ruleId: a.ruleId, ruleName: a.ruleName, vehicleId: a.vehicleId, status: a.status,
    openedAt: iso(a.openedAt),
    acknowledgedAt: a.acknowledgedAt === null ? null : iso(a.acknowledgedAt), acknowledgedBy: a.acknowledgedBy,
    resolvedAt: a.resolvedAt === null ? null : iso(a.resolvedAt), resolvedBy: a.resolvedBy,
    trigger: { timestamp: iso(a.triggerTimestamp), value: a.triggerValue ?? null },
  };
}

export function alertEvent(type: 'alert.opened' | 'alert.acknowledged' | 'alert.resolved', alert: AlertRecord, at: number): EventRecord {
  return newEvent(alert.organizationId, type, alert.vehicleId, at, alertView(alert));
}

export function openAlert(rule: AlertRuleRecord, vehicleId: string, at: number, value: TriggerValue): AlertRecord {
  return {
    id: newTimeOrderedId('alert'), organizationId: rule.organizationId, ruleId: rule.id, ruleName: rule.name, vehicleId, status: 'open',
    openedAt: at, acknowledgedAt: null, acknowledgedBy: null, resolvedAt: null, resolvedBy: null, triggerTimestamp: at, triggerValue: value,
  };
}

/** Resolving an alert: the change and its event. */
export function resolution(alert: AlertRecord, at: number, by: string): Pick<AlertChanges, 'changed' | 'events'> {
  const resolved = { ...alert, status: 'resolved' as const, resolvedAt: at, resolvedBy: by };
  return { changed: [{ id: alert.id, from: ['open', 'acknowledged'], status: 'resolved', at, by }], events: [alertEvent('alert.resolved', resolved, at)] };
}

/**
 * What the trip machine reports as events: the start and the end of trips (stops are not events).
 * Their `driverId` is the store's to give (`tripEventsOf`), once the commit's assignments are written.
 */
function tripEvents(organizationId: string, vehicleId: string, reported: TripEvent[], into: EventRecord[]): void {
  for (const e of reported) {
    if (e.type === 'trip.started') {
      into.push(newEvent(organizationId, 'trip.started', vehicleId, e.trip.startedAt, { startedAt: iso(e.trip.startedAt), start: e.trip.start, driverId: null }));
    } else if (e.type === 'trip.ended') {
      into.push(newEvent(organizationId, 'trip.ended', vehicleId, e.trip.endedAt, { ...tripView(e.trip), driverId: null }));
    }
  }
  reported.length = 0;
}

/**
 * Who drives, from a record's `driverIdentifier`: a driver's identifier while another (or none)
 * drives starts that driver's assignment at the record's time; one no driver has emits
 * `driver.unknown` when it differs from the last identifier carried.
 */
function identify(record: { timestamp: number; data: Data }, drivers: DriverContext, meters: { ident: string | null }, judged: Judged): void {
  const identifier = record.data.driverIdentifier;
  if (typeof identifier !== 'string') return;
  // As sent, else (an iButton's digits in lowercase) as stored.
  const driverId = drivers.byIdentifier.get(identifier) ?? identifierForms(identifier).slice(1).map((form) => drivers.byIdentifier.get(form)).find((id) => id !== undefined);
  if (driverId === undefined) {
    if (identifier !== meters.ident) {
      judged.events.push(newEvent(judged.organizationId, 'driver.unknown', judged.vehicleId, record.timestamp, { identifier }));
    }
  } else if (driverId !== drivers.current) {
    judged.assignments.push({ driverId, at: record.timestamp });
    drivers.current = driverId;
  }
  meters.ident = identifier;
}

function judgeRecords(
  d: Definitions, every: { trips: boolean; meters: boolean }, organizationId: string, vehicleId: string, records: readonly { timestamp: number; data: Data }[],
  previous: RuleState | undefined, unresolved: readonly AlertRecord[], _at: number, tally: { records: number }, drivers: DriverContext | undefined,
): Judged | undefined {
  const { trips } = every;
  const state: RuleState = previous === undefined
    ? emptyRuleState()
    : { ts: previous.ts, inside: [...previous.inside], held: { ...previous.held }, trip: previous.trip, meters: previous.meters, roll: previous.roll };
  // The trip machine runs for the trip events and for the rollups, which count its trips and ask it what moves.
  if (trips || every.meters) state.trip = state.trip === null ? initialTripState() : copyTripState(state.trip);
  const meters = every.meters ? (state.meters = state.meters === null ? initialMeters() : { ...state.meters }) : undefined;
  const driving = drivers === undefined || meters === undefined ? undefined : { ...drivers };
  // The rollups' own state: the driver as last known (a record's identifier, or the assignment the store read).
  const roll = meters === undefined ? undefined : (state.roll = state.roll === null ? { ...initialRollup(), cur: drivers?.current ?? null } : { ...state.roll });
  const judged: Judged = { organizationId, vehicleId, state, opened: [], changed: [], events: [], assignments: [], tallies: [], marks: [], late: null };
  // Copies: the engine never changes a state it is given.
  const pending: TallyRow[] | undefined = roll?.pend.map(unpackTally);
  const open = new Map(unresolved.map((a) => [a.ruleId, a]));
  const rules = d.rules.length === 0 ? d.rules : d.rules.filter((r) => appliesTo(r.vehicleIds, vehicleId));
  const sorted = records.length > 1 ? [...records].sort((a, b) => a.timestamp - b.timestamp) : records;
  // Geofences limited to some vehicles are asked about this one; with none limited, no question.
  const applies = d.limitedGeofences ? (id: string) => appliesTo(d.geofences.get(id)!.vehicleIds, vehicleId) : undefined;
  const reported: TripEvent[] = [];
  let changed = false;

  for (const record of sorted) {
    // A record older than the newest judged changes nothing (out-of-order arrivals make no events);
    // the rollups are replayed from its day.
    if (record.timestamp <= state.ts) {
      if (roll !== undefined && (judged.late === null || record.timestamp < judged.late)) judged.late = record.timestamp;
      continue;
    }
    if (meters !== undefined) {
      advanceMeters(meters, state.ts, record);
      if (driving !== undefined) identify(record, driving, meters, judged);
    }
    state.ts = record.timestamp;
    changed = true;
    // The first record of an hour marks the state before it: where a replay may start.
    if (roll !== undefined && roll.t !== null && Math.floor(record.timestamp / HOUR_MS) > Math.floor(roll.t / HOUR_MS)) {
      judged.marks.push({ hour: Math.floor(record.timestamp / HOUR_MS), state: JSON.stringify({ roll, trip: state.trip }) });
    }
    if (state.trip !== null) advanceInPlace(state.trip, record, DEFAULT_TRIP_SETTINGS, reported);
    if (roll !== undefined) {
      countRecord(roll, state.trip!, reported, record, driving === undefined ? roll.cur : driving.current, HOUR_MS, pending!);
    }
    if (reported.length > 0) {
      if (trips) tripEvents(organizationId, vehicleId, reported, judged.events);
      else reported.length = 0;
    }
    if (d.geofences.size === 0 && rules.length === 0) continue;
    tally.records++;
    const location = record.data.location as { lat: number; lng: number } | undefined;
    if (location !== undefined) {
      const now = d.index.containing(location.lng, location.lat, applies);
      // Most records stay where the one before was (outside every geofence, or in the same one).
      if (!sameMembers(now, state.inside)) {
        const before = new Set(state.inside);
        const after = new Set(now);
        for (const id of now) {
          if (before.has(id)) continue;
          const g = d.geofences.get(id)!;
          judged.events.push(newEvent(organizationId, 'geofence.entered', vehicleId, record.timestamp, { geofenceId: id, name: g.name, location }));
        }
        for (const id of before) {
          const g = d.geofences.get(id);
          // A deleted geofence leaves the set without an exit.
          if (after.has(id) || g === undefined) continue;
          judged.events.push(newEvent(organizationId, 'geofence.exited', vehicleId, record.timestamp, { geofenceId: id, name: g.name, location }));
        }
        state.inside = now.sort();
      }
    }
    for (const rule of rules) judgeRule(rule, rule.condition, record, location, state, open, judged, vehicleId);
    // A batch alternating in and out of many geofences stops here, before making all its events.
    if (judged.events.length > MAX_EVENTS_PER_BATCH) limitBatchEvents(sorted.length, judged.events.length);
  }
  if (roll !== undefined && roll.t !== null) {
    // Hours before the last record's are complete: written now; the last record's waits in the state.
    const current = Math.floor(roll.t / HOUR_MS);
    roll.pend = [];
    for (const t of pending!) {
      if (t.bucket < current) judged.tallies.push(t);
      else roll.pend.push(packTally(t));
    }
  }
  return changed || judged.late !== null ? judged : undefined;
}

function judgeRule(
  rule: AlertRuleRecord, condition: Condition, record: { timestamp: number; data: Data }, location: unknown,
  state: RuleState, open: Map<string, AlertRecord>, judged: Judged, vehicleId: string,
): void {
  let holds: boolean;
  // Records were validated at ingest: a field's value is a number, a string or a boolean; a location, lat and lng.
  let value: TriggerValue | undefined;
  let forSeconds: number;
  switch (condition.kind) {
    case 'offline': {
      // Telemetry is back: an offline alert resolves itself.
      const alert = open.get(rule.id);
      if (alert !== undefined) close(rule, alert, record.timestamp, open, judged);
      return;
    }
    case 'threshold':
      value = fieldValue(record.data, condition.field) as TriggerValue | undefined;
      if (value === undefined) return; // a record without the field leaves the rule as it was
      holds = compare(value, condition.op, condition.value);
      forSeconds = condition.forSeconds;
      break;
    case 'geofence': {
      if (location === undefined) return;
      const inside = state.inside.includes(condition.geofenceId);
      holds = condition.when === 'inside' ? inside : !inside;
      value = location as TriggerValue;
      forSeconds = condition.forSeconds;
      break;
    }
  }
  const alert = open.get(rule.id);
  if (!holds) {
    // Deleted only when there: a delete of every rule's key on every record cost more than the rest of the rule.
    if (state.held[rule.id] !== undefined) delete state.held[rule.id];
    if (alert !== undefined) close(rule, alert, record.timestamp, open, judged);
    return;
  }
  const since = (state.held[rule.id] ??= record.timestamp);
  if (alert === undefined && record.timestamp - since >= forSeconds * 1000) {
    const opened = openAlert(rule, vehicleId, record.timestamp, value);
    judged.opened.push(opened);
    judged.events.push(alertEvent('alert.opened', opened, record.timestamp));
    open.set(rule.id, opened);
  }
}

/** The rule's alert resolves itself at `at`. */
function close(rule: AlertRuleRecord, alert: AlertRecord, at: number, open: Map<string, AlertRecord>, judged: Judged): void {
  const { changed, events } = resolution(alert, at, 'system');
  for (const c of changed) judged.changed.push(c);
  for (const e of events) judged.events.push(e);
  open.delete(rule.id);
}

/**
 * The trip events of `events`, each with its trip's start (ms): the store gives each the driver
 * assigned then, inside the commit, after the assignments the same records started.
 */
export function tripEventsOf(events: readonly EventRecord[]): { event: EventRecord; startedAt: number }[] {
  const trips: { event: EventRecord; startedAt: number }[] = [];
  for (const event of events) {
    if (event.type === 'trip.started' || event.type === 'trip.ended') trips.push({ event, startedAt: Date.parse(event.data.startedAt as string) });
  }
  return trips;
}

/** Whether two lists of geofence ids hold the same ids (`inside` is kept sorted; a lookup's order is the index's). */
function sameMembers(found: readonly string[], inside: readonly string[]): boolean {
  if (found.length !== inside.length) return false;
  if (found.length === 0) return true;
  if (found.length === 1) return found[0] === inside[0];
  const sorted = [...found].sort();
  return sorted.every((id, i) => id === inside[i]);
}
