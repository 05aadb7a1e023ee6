// The dashboard's only way to the service: the public HTTP API, exactly as any other client, with
// one of two credentials (docs/API.md "Users and sessions"). A person signed in with a password
// has the session cookie, which the browser sends itself on this origin; every write then carries
// the session's CSRF token in X-CSRF-Token (the token is kept in memory and in sessionStorage).
// A developer's API key is a bearer token instead: it lives in sessionStorage (gone when the tab
// closes) and only ever travels in the Authorization header, never in a URL.

import type { Schemas } from '../sdk/src/types.ts';
import { fetchPatiently, retryAfterOf } from './retry.ts';

const KEY_STORAGE = 'fleet.apiKey';
const CSRF_STORAGE = 'fleet.csrfToken';
const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

// The shapes of the API's answers are the SDK's, generated from the OpenAPI document
// (sdk/src/schema.d.ts), so the dashboard cannot drift from what the service sends. Type-only:
// nothing of the SDK is bundled.
export type VehicleListItem = Schemas['VehicleSummary'];
export type VehicleDetails = Schemas['Vehicle'];
export type VehicleList = Schemas['VehicleList'];
export type VehicleStatus = Schemas['VehicleStatus'];
export type TelemetryData = Schemas['TelemetryData'];
export type TelemetryRecord = Schemas['TelemetryRecord'];
export type History = Schemas['TelemetryHistory'];
export type StatusHistoryEntry = Schemas['VehicleStatusHistoryEntry'];
export type StatusHistory = Schemas['VehicleStatusHistory'];
export type CreatedStream = Schemas['CreatedStream'];
export type StreamTicket = Schemas['StreamTicket'];
export type { FleetEvent as EventEnvelope } from '../sdk/src/types.ts';
export type Alert = Schemas['Alert'];
export type AlertRule = Schemas['AlertRule'];
export type AlertCondition = Schemas['AlertCondition'];
export type Geofence = Schemas['Geofence'];
export type GeofenceGeometry = Schemas['GeofenceGeometry'];
export type Trip = Schemas['Trip'];
export type Stop = Schemas['Stop'];
export type Device = Schemas['Device'];
export type Driver = Schemas['Driver'];
export type VehicleMeters = Schemas['VehicleMeters'];
export type MaintenanceSchedule = Schemas['MaintenanceSchedule'];
export type MaintenanceScheduleList = Schemas['MaintenanceScheduleList'];
export type FleetMaintenance = Schemas['FleetMaintenance'];
export type VehicleMaintenance = Schemas['VehicleMaintenance'];
export type ServiceRecord = Schemas['ServiceRecord'];
export type DriverList = Schemas['DriverList'];
export type DriverAssignment = Schemas['DriverAssignment'];
export type DriverAssignmentList = Schemas['DriverAssignmentList'];
export type Command = Schemas['Command'];
export type CommandList = Schemas['CommandList'];
export type CommandTypes = Schemas['CommandTypes'];
/**
 * The key's `groupIds` (null: the whole organization) is in the service's answers but not yet in
 * the SDK's generated types; the intersection keeps this right once they have it.
 */
export type ApiKey = Schemas['ApiKey'] & { groupIds?: string[] | null };
export type Webhook = Schemas['Webhook'];
export type WebhookDelivery = Schemas['WebhookDelivery'];
export type WebhookAttempt = Schemas['WebhookAttempt'];
export type User = Schemas['User'];
export type InvitedUser = Schemas['InvitedUser'];
export type UserList = Schemas['UserList'];
export type Role = Schemas['Role'];
export type Scope = Schemas['Scope'];
export type Session = Schemas['Session'];
export type TotpEnrolment = Schemas['TotpEnrolment'];
export type RecoveryCodes = Schemas['RecoveryCodes'];
export type AuditEntry = Schemas['AuditEntry'];
export type AuditLogPage = Schemas['AuditLogPage'];
export type VehicleGroup = Schemas['VehicleGroup'];
export type VehicleGroupList = Schemas['VehicleGroupList'];
export type SummaryReport = Schemas['SummaryReport'];
export type SummaryRow = Schemas['SummaryRow'];
export type ReportSchedule = Schemas['ReportSchedule'];
export type ReportScheduleList = Schemas['ReportScheduleList'];
/** A kept report: one period's summary of a report schedule; its content is at `url`. */
export type KeptReport = Schemas['Report'];
export type KeptReportList = Schemas['ReportList'];

/** One problem in a request, as the service names it: a JSON Pointer (`/configuration/capacity`) and a message. */
export interface FieldError {
  in?: string;
  path: string;
  message: string;
}

/** Which credential a request went with: it decides how a 401 or 403 is explained. */
export type Credential = 'key' | 'session';

/** An RFC 9457 problem, or a failure to reach the service at all (status 0). */
export class ApiError extends Error {
  readonly status: number;
  readonly title: string;
  readonly detail: string | undefined;
  readonly code: string | undefined;
  /** The per-field `errors` of a validation problem; empty otherwise. */
  readonly errors: readonly FieldError[];
  /** Seconds from `Retry-After` (a 429, a 503), when the service said. */
  readonly retryAfter: number | undefined;
  readonly credential: Credential;

  constructor(status: number, title: string, detail?: string, code?: string, errors: readonly FieldError[] = [],
    more: { retryAfter?: number; credential?: Credential } = {}) {
    super(detail === undefined ? title : `${title}: ${detail}`);
    this.name = 'ApiError';
    this.status = status;
    this.title = title;
    this.detail = detail;
    this.code = code;
    this.errors = errors;
    this.retryAfter = more.retryAfter;
    this.credential = more.credential ?? 'key';
  }
}

function fieldErrorsOf(value: unknown): FieldError[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((entry: unknown) => {
    if (typeof entry !== 'object' || entry === null) return [];
    const { in: where, path, message } = entry as { in?: unknown; path?: unknown; message?: unknown };
    if (typeof path !== 'string' || typeof message !== 'string') return [];
    return [{ ...(typeof where === 'string' ? { in: where } : {}), path, message }];
  });
}

export function storedKey(): string | undefined {
  return sessionStorage.getItem(KEY_STORAGE) ?? undefined;
}

export function storeKey(key: string | undefined): void {
  if (key === undefined) sessionStorage.removeItem(KEY_STORAGE);
  else sessionStorage.setItem(KEY_STORAGE, key);
}

/** The signed-in person's session (what sign-in and GET /auth/session answer), while there is one. */
let session: Session | undefined;

export function currentSession(): Session | undefined {
  return session;
}

/** Keeps the session of a sign-in (or forgets it: undefined), its CSRF token also in sessionStorage. */
export function storeSession(next: Session | undefined): void {
  session = next;
  if (next === undefined) sessionStorage.removeItem(CSRF_STORAGE);
  else sessionStorage.setItem(CSRF_STORAGE, next.csrfToken);
}

/**
 * Whether to offer what needs `scope`: a person's session says; an API key's scopes are not known
 * to the page, so a key is offered everything and the service says what it may not do.
 */
export function offers(scope: Scope): boolean {
  if (storedKey() !== undefined) return true;
  return currentSession()?.scopes.includes(scope) ?? false;
}

/**
 * Whether the signed-in person is limited to vehicle groups (their `groupIds`): they see only
 * those groups and their vehicles, and may not create, change or delete groups. A key's groups
 * are not known to the page (as its scopes are not): it is taken as not limited.
 */
export function limitedToGroups(): boolean {
  if (storedKey() !== undefined) return false;
  const groups = currentSession()?.user.groupIds;
  return groups !== null && groups !== undefined;
}

function csrfToken(): string | undefined {
  return session?.csrfToken ?? sessionStorage.getItem(CSRF_STORAGE) ?? undefined;
}

/**
 * Called when a request answers 401 because its credential is no longer good: the key was
 * revoked or expired, or the session ended. Not for a wrong password or code, which are 401 too
 * (`invalid-credentials`, `totp-required`) and are the form's to show.
 */
let onUnauthorized: (error: ApiError) => void = () => {};
export function whenUnauthorized(handler: (error: ApiError) => void): void {
  onUnauthorized = handler;
}

async function problemOf(res: Response, credential: Credential): Promise<ApiError> {
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    body = undefined;
  }
  const problem = (typeof body === 'object' && body !== null ? body : {}) as { title?: unknown; detail?: unknown; code?: unknown; errors?: unknown };
  const title = typeof problem.title === 'string' ? problem.title : `${res.status} ${res.statusText || 'Error'}`;
  const detail = typeof problem.detail === 'string' ? problem.detail : undefined;
  const code = typeof problem.code === 'string' ? problem.code : undefined;
  const retryAfter = retryAfterOf(res);
  return new ApiError(res.status, title, detail, code, fieldErrorsOf(problem.errors), { credential, ...(retryAfter === undefined ? {} : { retryAfter }) });
}

/** Fetch options for a request on this origin with the current credential (a download, say): the key's header, or the cookie. */
export function credentialed(method = 'GET'): { headers: Record<string, string>; credentials: RequestCredentials; credential: Credential } {
  const key = storedKey();
  if (key !== undefined) return { headers: { authorization: `Bearer ${key}` }, credentials: 'omit', credential: 'key' };
  const headers: Record<string, string> = {};
  const csrf = csrfToken();
  if (WRITES.has(method) && csrf !== undefined) headers['x-csrf-token'] = csrf;
  return { headers, credentials: 'same-origin', credential: 'session' };
}

export interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  /** A key to try instead of the stored credential (signing in with a key). */
  key?: string;
  signal?: AbortSignal;
  /** The body's media type; `application/json` unless said (a merge patch says `application/merge-patch+json`). */
  contentType?: string;
}

/**
 * Sends a request with the stored credential (or `options.key`) and answers its response when it
 * is a success. A failure is thrown as an ApiError (status 0 when the service cannot be reached); a
 * 401 that ends the credential tells `whenUnauthorized`'s handler.
 */
async function send(method: string, path: string, options: RequestOptions & { accept?: string }): Promise<Response> {
  const sent = options.key === undefined
    ? credentialed(method)
    : { headers: { authorization: `Bearer ${options.key}` }, credentials: 'omit' as const, credential: 'key' as const };
  const headers: Record<string, string> = { accept: options.accept ?? 'application/json', ...sent.headers };
  let url = path;
  if (options.query !== undefined) {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(options.query)) {
      if (value !== undefined && value !== '') params.set(name, String(value));
    }
    const text = params.toString();
    if (text !== '') url += `?${text}`;
  }
  const init: RequestInit = { method, headers, cache: 'no-store', credentials: sent.credentials };
  if (options.signal !== undefined) init.signal = options.signal;
  if (options.body !== undefined) {
    headers['content-type'] = options.contentType ?? 'application/json';
    init.body = JSON.stringify(options.body);
  }
  let res: Response;
  try {
    res = await fetchPatiently(url, init);
  } catch (error) {
    if (error instanceof DOMException && error.name === 'AbortError') throw error;
    throw new ApiError(0, 'Cannot reach the service', 'Check your network connection; the dashboard retries when you reload or act again.');
  }
  if (!res.ok) {
    const problem = await problemOf(res, sent.credential);
    if (res.status === 401 && options.key === undefined && problem.code !== 'invalid-credentials' && problem.code !== 'totp-required') {
      onUnauthorized(problem);
    }
    throw problem;
  }
  return res;
}

export async function api<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
  const res = await send(method, path, options);
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

export const encode = encodeURIComponent;

/**
 * Downloads what a GET of `path` answers (an export, a report as CSV) as a file: fetched here with
 * the key or the session cookie and handed to the browser as a Blob, never opened as a URL that
 * would need the key in it. Answers the file's name: the one `Content-Disposition` gives, else
 * `fallbackName`. A problem is thrown as an ApiError, as `api` throws it.
 */
export async function download(path: string, query: Record<string, string | undefined>, fallbackName: string, signal?: AbortSignal): Promise<string> {
  const res = await send('GET', path, { query, accept: '*/*', ...(signal === undefined ? {} : { signal }) });
  const blob = await res.blob();
  const disposition = res.headers.get('content-disposition') ?? '';
  const name = /filename="([^"]+)"/.exec(disposition)?.[1] ?? fallbackName;
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  // The click has started the download; the URL can go once the browser has taken it.
  window.setTimeout(() => URL.revokeObjectURL(url), 10_000);
  return name;
}

/** The most items one request of a paged list reads (the API's largest page). */
const READ_ALL_PAGE = 1000;

/** Every item of a paged list (its items in `member`, with `total`), read a page at a time. */
export async function readAll<T>(path: string, member: string, signal?: AbortSignal): Promise<T[]> {
  const items: T[] = [];
  for (;;) {
    const page = await api<Record<string, unknown> & { total: number }>('GET', path, {
      query: { limit: READ_ALL_PAGE, offset: items.length }, ...(signal === undefined ? {} : { signal }),
    });
    const got = (page[member] ?? []) as T[];
    items.push(...got);
    if (got.length === 0 || items.length >= page.total) return items;
  }
}

/** A wait in words: "40 seconds", "15 minutes", "2 hours". */
export function waitInWords(seconds: number): string {
  if (seconds < 60) return seconds === 1 ? '1 second' : `${seconds} seconds`;
  const minutes = Math.ceil(seconds / 60);
  if (minutes < 60) return minutes === 1 ? '1 minute' : `${minutes} minutes`;
  const hours = Math.round(minutes / 60);
  return hours === 1 ? 'about an hour' : `about ${hours} hours`;
}

/** A sentence a person can act on, for 401, 403 and 429 in particular. */
export function explain(error: unknown): { title: string; detail: string } {
  if (error instanceof ApiError && error.credential === 'session') {
    if (error.status === 401 && error.code !== 'invalid-credentials' && error.code !== 'totp-required') {
      return { title: 'You are signed out', detail: 'Your session has ended (signed out, idle too long, or the account was changed). Sign in again.' };
    }
    if (error.status === 403 && error.code === 'insufficient-scope') {
      return { title: 'Your role does not allow this', detail: `${error.detail ?? error.title} Ask an admin of your organization if you need it.` };
    }
    if (error.code === 'login-locked') {
      const wait = error.retryAfter === undefined ? 'later' : `in ${waitInWords(error.retryAfter)}`;
      return { title: error.title, detail: `Sign-in for this email is paused after too many failed attempts. Try again ${wait}.` };
    }
  }
  if (error instanceof ApiError) {
    if (error.status === 429 && error.retryAfter !== undefined && error.code !== 'login-locked') {
      return { title: error.title, detail: `${error.detail ?? ''} Try again in ${waitInWords(error.retryAfter)}.`.trim() };
    }
    if (error.status === 401 && error.credential === 'key') {
      return { title: 'This API key was not accepted', detail: `${error.detail ?? error.title} Check the key, or ask an administrator for a new one.` };
    }
    if (error.status === 403 && error.code === 'insufficient-scope' && error.credential === 'key') {
      return {
        title: 'This API key lacks a permission',
        detail: `${error.detail ?? error.title} Ask an administrator for a key with that scope.`,
      };
    }
    return { title: error.title, detail: error.detail ?? '' };
  }
  return { title: 'Something went wrong', detail: error instanceof Error ? error.message : String(error) };
}

/**
 * A live stream's WebSocket URL on this page's own origin. The service builds stream URLs from
 * FLEET_PUBLIC_URL, whose default names `localhost`; the dashboard is served by the very service
 * it talks to, so the page's own host reaches it whatever name it was opened by (127.0.0.1, a LAN
 * address), and a socket of the page's own origin is always allowed.
 */
export function onPageOrigin(url: string): string {
  const socket = new URL(url);
  socket.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  socket.host = location.host;
  return socket.toString();
}

/** Why a live stream's socket closed, for a person: the service's reason, or what a refusal looks like. */
export function socketClosedWhy(event: CloseEvent, opened: boolean): string {
  if (event.reason !== '') return `${event.reason} (${event.code})`;
  return opened
    ? `the connection was closed (${event.code})`
    : `the service refused the live connection or could not be reached at ${location.host} (${event.code})`;
}
