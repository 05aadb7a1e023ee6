// What OsmAnd-style clients send, turned into telemetry records (pure: no I/O). Two shapes:
// parameters (query string or form body: OsmAnd, Traccar Client before version 9) and the JSON
// body of Traccar Client 9. Values the apps send for "unknown" (a negative speed, heading or
// battery) mean absent. Unit conversions: speed in knots (parameters) or m/s (JSON) to km/h,
// battery level 0..1 (JSON) to percent, odometer m to km.
import { AppError, type FieldError } from '../../errors.ts';
import { isDateTime } from '../../schema/date-time.ts';
import { DRIVER_IDENTIFIER_PATTERN, type TelemetryData } from '../../telemetry/schema.ts';

export interface OsmandRecord {
  timestamp?: string;
  data: TelemetryData;
}

export interface OsmandReport {
  identifier: string;
  records: OsmandRecord[];
}

const KNOT_KMH = 1.852;
const MS_KMH = 3.6;
const DIAGNOSTIC_KEY = /^[a-zA-Z][a-zA-Z0-9_.-]{0,63}$/;
/** Parameters with a field of their own; any other scalar goes to diagnostics. */
const PARAMETERS = new Set(['id', 'deviceid', 'lat', 'lon', 'timestamp', 'speed', 'bearing', 'heading', 'batt']);
const DRIVER_IDENTIFIER = new RegExp(DRIVER_IDENTIFIER_PATTERN);
const IGNITION = new Map([['true', true], ['1', true], ['false', false], ['0', false]]);
/** Beyond this many records in one JSON body, the request is refused (the telemetry batch limit). */
const MAX_RECORDS = 1000;

type Where = 'query' | 'body';

class Problems {
  readonly list: FieldError[] = [];
  add(where: Where, path: string, message: string): undefined {
    this.list.push({ in: where, path, message });
    return undefined;
  }
  throwIfAny(): void {
    if (this.list.length === 0) return;
    const shown = this.list.slice(0, 5).map((e) => `${e.path} ${e.message}`).join('; ');
    throw new AppError('validation-failed', `Invalid OsmAnd report, nothing stored: ${shown}.`, { errors: this.list });
  }
}

/**
 * A time as the apps send it: Unix seconds, Unix milliseconds (told apart by size: 10^12 seconds
 * is 33,000 years away) or an ISO 8601 date-time with its zone, held to the HTTP API's own rules
 * (a real calendar date, a zone: `Date.parse` alone would roll February 30th over into March and
 * read a time without a zone in the server's own); as ISO 8601 UTC, or undefined when it is none of those.
 */
export function parseTime(value: string | number): string | undefined {
  let ms: number;
  const text = typeof value === 'number' ? String(value) : value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) {
    const n = Number(text);
    ms = n < 1e12 ? Math.round(n * 1000) : Math.round(n);
  } else if (isDateTime(text)) {
    ms = Date.parse(text.replace(' ', 'T'));
  } else {
    return undefined;
  }
  return Number.isFinite(ms) && ms >= 0 && ms <= 8.64e15 ? new Date(ms).toISOString() : undefined;
}

/** A number from JSON (a number only) or from parameters (text, which is all they carry). */
function number(problems: Problems, where: Where, path: string, value: unknown, text = false): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value) && !text) return value;
  if (text && typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
  return problems.add(where, path, 'must be a finite number');
}

/** A negative value is the apps' "unknown". */
const known = (n: number | undefined): number | undefined => (n === undefined || n < 0 ? undefined : n);

function scalarOf(text: string): string | number | boolean {
  if (text === 'true' || text === 'false') return text === 'true';
  const n = Number(text);
  return text.trim() !== '' && Number.isFinite(n) && /^[-+]?[\d.]/.test(text.trim()) ? n : text;
}

function location(problems: Problems, where: Where, paths: [string, string], lat: unknown, lng: unknown, text = false): TelemetryData['location'] {
  if (lat === undefined && lng === undefined) return undefined;
  if (lat === undefined || lng === undefined) return problems.add(where, lat === undefined ? paths[0] : paths[1], 'is required with the other coordinate');
  const la = number(problems, where, paths[0], lat, text);
  const lo = number(problems, where, paths[1], lng, text);
  if (la !== undefined && Math.abs(la) > 90) return problems.add(where, paths[0], 'must be from -90 to 90');
  if (lo !== undefined && Math.abs(lo) > 180) return problems.add(where, paths[1], 'must be from -180 to 180');
  return la === undefined || lo === undefined ? undefined : { lat: la, lng: lo };
}

function withDiagnostics(data: TelemetryData, diagnostics: Record<string, string | number | boolean>): TelemetryData {
  return Object.keys(diagnostics).length === 0 ? data : { ...data, diagnostics };
}

/** Query-string or form parameters, one value each. */
export function decodeParameters(params: Record<string, unknown>, where: Where): OsmandReport {
  const problems = new Problems();
  const one = (name: string): string | undefined => {
    const value = params[name];
    if (Array.isArray(value)) return problems.add(where, `/${name}`, 'is given more than once');
    return typeof value === 'string' ? value : undefined;
  };
  const id = one('id');
  const deviceid = one('deviceid');
  const identifier = id ?? deviceid;
  if (identifier === undefined || identifier === '') problems.add(where, '/id', 'is required (id or deviceid)');
  else if (id !== undefined && deviceid !== undefined && id !== deviceid) problems.add(where, '/deviceid', 'differs from id');

  const data: TelemetryData = {};
  const loc = location(problems, where, ['/lat', '/lon'], one('lat'), one('lon'), true);
  if (loc !== undefined) data.location = loc;
  const speed = known(optional(problems, where, 'speed', one('speed')));
  if (speed !== undefined) data.speed = speed * KNOT_KMH;
  const heading = known(optional(problems, where, 'bearing', one('bearing')) ?? optional(problems, where, 'heading', one('heading')));
  if (heading !== undefined) data.heading = heading;
  const battery = known(optional(problems, where, 'batt', one('batt')));
  if (battery !== undefined) data.battery = battery;
  const time = one('timestamp');
  const timestamp = time === undefined ? undefined : parseTime(time);
  if (time !== undefined && timestamp === undefined) problems.add(where, '/timestamp', 'must be Unix seconds, Unix milliseconds or ISO 8601');

  const diagnostics: Record<string, string | number | boolean> = {};
  for (const name of Object.keys(params)) {
    if (PARAMETERS.has(name) || !DIAGNOSTIC_KEY.test(name)) continue;
    const text = one(name);
    if (text === undefined) continue;
    // `ignition` and `driverUniqueId` of a form the records take are fields; of another, diagnostics as any other.
    if (name === 'ignition' && IGNITION.has(text)) data.ignition = IGNITION.get(text)!;
    else if (name === 'driverUniqueId' && DRIVER_IDENTIFIER.test(text)) data.driverIdentifier = text;
    else diagnostics[name] = scalarOf(text);
  }
  problems.throwIfAny();
  return { identifier: identifier!, records: [{ ...(timestamp === undefined ? {} : { timestamp }), data: withDiagnostics(data, diagnostics) }] };
}

function optional(problems: Problems, where: Where, name: string, text: string | undefined): number | undefined {
  return text === undefined || text === '' ? undefined : number(problems, where, `/${name}`, text, true);
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isScalar = (value: unknown): value is string | number | boolean =>
  typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));

/** `{device_id, location: {...} | [{...}, ...]}`, as Traccar Client 9 sends it. */
export function decodeJson(body: unknown): OsmandReport {
  const problems = new Problems();
  if (!isObject(body)) {
    problems.add('body', '', 'must be an object {device_id, location}');
    problems.throwIfAny();
  }
  const { device_id: identifier, location: given } = body as Record<string, unknown>;
  if (typeof identifier !== 'string' || identifier === '') problems.add('body', '/device_id', 'is required (a string)');
  const locations = Array.isArray(given) ? given : [given];
  if (locations.length === 0 || locations.length > MAX_RECORDS) problems.add('body', '/location', `must hold 1 to ${MAX_RECORDS} locations`);
  const records = locations.slice(0, MAX_RECORDS).map((item, i) => jsonRecord(problems, item, Array.isArray(given) ? `/location/${i}` : '/location'));
  problems.throwIfAny();
  return { identifier: identifier as string, records: records as OsmandRecord[] };
}

function jsonRecord(problems: Problems, item: unknown, path: string): OsmandRecord | undefined {
  if (!isObject(item)) return problems.add('body', path, 'must be an object {timestamp, coords, ...}');
  const coords = item.coords === undefined ? {} : item.coords;
  if (!isObject(coords)) return problems.add('body', `${path}/coords`, 'must be an object');
  const data: TelemetryData = {};
  const diagnostics: Record<string, string | number | boolean> = {};
  const loc = location(problems, 'body', [`${path}/coords/latitude`, `${path}/coords/longitude`], coords.latitude, coords.longitude);
  if (loc !== undefined) data.location = loc;
  const num = (value: unknown, at: string) => (value === undefined || value === null ? undefined : number(problems, 'body', at, value));
  const speed = known(num(coords.speed, `${path}/coords/speed`));
  if (speed !== undefined) data.speed = speed * MS_KMH;
  const heading = known(num(coords.heading, `${path}/coords/heading`));
  if (heading !== undefined) data.heading = heading;
  for (const [name, value] of Object.entries(coords)) {
    if (!['latitude', 'longitude', 'speed', 'heading'].includes(name) && isScalar(value) && DIAGNOSTIC_KEY.test(name)) diagnostics[name] = value;
  }
  if (item.battery !== undefined && item.battery !== null) {
    if (!isObject(item.battery)) return problems.add('body', `${path}/battery`, 'must be an object {level}');
    const level = known(num(item.battery.level, `${path}/battery/level`));
    if (level !== undefined) data.battery = level * 100;
    if (typeof item.battery.is_charging === 'boolean') diagnostics.is_charging = item.battery.is_charging;
  }
  const odometer = known(num(item.odometer, `${path}/odometer`));
  if (odometer !== undefined) data.odometer = odometer / 1000;
  let timestamp: string | undefined;
  if (item.timestamp !== undefined) {
    timestamp = typeof item.timestamp === 'string' || typeof item.timestamp === 'number' ? parseTime(item.timestamp) : undefined;
    if (timestamp === undefined) problems.add('body', `${path}/timestamp`, 'must be ISO 8601, Unix seconds or Unix milliseconds');
  }
  // Other scalars of the location (is_moving, event, uuid, ...) are kept; nested objects the apps
  // add (activity, extras, geofence) are not.
  for (const [name, value] of Object.entries(item)) {
    if (!['timestamp', 'coords', 'battery', 'odometer'].includes(name) && isScalar(value) && DIAGNOSTIC_KEY.test(name)) diagnostics[name] = value;
  }
  return { ...(timestamp === undefined ? {} : { timestamp }), data: withDiagnostics(data, diagnostics) };
}
