// The dashboard's only way to the service: the public HTTP API, with the API key as a bearer
// token, exactly as any other client. The key lives in sessionStorage (gone when the tab
// closes) and only ever travels in the Authorization header, never in a URL.

import type { Schemas } from '../sdk/src/types.ts';

const KEY_STORAGE = 'fleet.apiKey';

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
export type ApiKey = Schemas['ApiKey'];
export type Webhook = Schemas['Webhook'];
export type WebhookDelivery = Schemas['WebhookDelivery'];
export type WebhookAttempt = Schemas['WebhookAttempt'];

/** One problem in a request, as the service names it: a JSON Pointer (`/configuration/capacity`) and a message. */
export interface FieldError {
  in?: string;
  path: string;
  message: string;
}

/** An RFC 9457 problem, or a failure to reach the service at all (status 0). */
export class ApiError extends Error {
  readonly status: number;
  readonly title: string;
  readonly detail: string | undefined;
  readonly code: string | undefined;
  /** The per-field `errors` of a validation problem; empty otherwise. */
  readonly errors: readonly FieldError[];

  constructor(status: number, title: string, detail?: string, code?: string, errors: readonly FieldError[] = []) {
    super(detail === undefined ? title : `${title}: ${detail}`);
    this.name = 'ApiError';
    this.status = status;
    this.title = title;
    this.detail = detail;
    this.code = code;
    this.errors = errors;
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

/** Called when a request made with the stored key answers 401: the key was revoked or expired. */
let onUnauthorized: (error: ApiError) => void = () => {};
export function whenUnauthorized(handler: (error: ApiError) => void): void {
  onUnauthorized = handler;
}

async function problemOf(res: Response): Promise<ApiError> {
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
  return new ApiError(res.status, title, detail, code, fieldErrorsOf(problem.errors));
}

export interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  /** A key to try instead of the stored one (signing in). */
  key?: string;
  signal?: AbortSignal;
  /** The body's media type; `application/json` unless said (a merge patch says `application/merge-patch+json`). */
  contentType?: string;
}

export async function api<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
  const key = options.key ?? storedKey();
  const headers: Record<string, string> = { accept: 'application/json' };
  if (key !== undefined) headers.authorization = `Bearer ${key}`;
  let url = path;
  if (options.query !== undefined) {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(options.query)) {
      if (value !== undefined && value !== '') params.set(name, String(value));
    }
    const text = params.toString();
    if (text !== '') url += `?${text}`;
  }
  const init: RequestInit = { method, headers, cache: 'no-store', credentials: 'omit' };
  if (options.signal !== undefined) init.signal = options.signal;
  if (options.body !== undefined) {
    headers['content-type'] = options.contentType ?? 'application/json';
    init.body = JSON.stringify(options.body);
  }
  let res: Response;
  try {
    res = await fetch(url, init);
  } catch (error) {
    if (error instanceof DOMException && error.name === 'AbortError') throw error;
    throw new ApiError(0, 'Cannot reach the service', 'Check your network connection; the dashboard retries when you reload or act again.');
  }
  if (!res.ok) {
    const problem = await problemOf(res);
    if (res.status === 401 && options.key === undefined) onUnauthorized(problem);
    throw problem;
  }
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

export const encode = encodeURIComponent;

/** A sentence a person can act on, for 401 and 403 in particular. */
export function explain(error: unknown): { title: string; detail: string } {
  if (error instanceof ApiError) {
    if (error.status === 401) {
      return { title: 'This API key was not accepted', detail: `${error.detail ?? error.title} Check the key, or ask an administrator for a new one.` };
    }
    if (error.status === 403 && error.code === 'insufficient-scope') {
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
