// Names for the shapes of the Fleet API, taken from the generated schema (schema.d.ts). Every
// other file of the SDK uses these names, never the generated structure itself, so where the
// schema says a shape is, is written down once: here.
import type { components, paths } from './schema.d.ts';

export type { components, paths };
/** Every schema the API names, by its name in the OpenAPI document (`Schemas['Vehicle']`). */
export type Schemas = components['schemas'];

type Method = 'get' | 'put' | 'post' | 'delete' | 'patch';

/** The JSON body of response `S` of `M P`. */
export type ResponseBody<P extends keyof paths, M extends Method, S extends number> =
  paths[P][M] extends { responses: { [K in S]: { content: { 'application/json': infer T } } } } ? T : never;

/** The JSON request body of `M P`. */
export type RequestBody<P extends keyof paths, M extends Method> =
  paths[P][M] extends { requestBody?: { content: { 'application/json': infer T } } } ? T : never;

/** The query parameters of `M P` (an object, possibly empty). */
export type QueryParams<P extends keyof paths, M extends Method = 'get'> =
  paths[P][M] extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

// Vehicles
export type Vehicle = ResponseBody<'/v2/fleet/vehicles/{id}', 'get', 200>;
export type VehicleListItem = ResponseBody<'/v2/fleet/vehicles', 'get', 200>['vehicles'][number];
export type VehicleRegistration = RequestBody<'/v2/fleet/vehicles', 'post'>;
export type VehicleStatus = Vehicle['status'];
export type VehicleType = Vehicle['type'];
export type StatusChange = ResponseBody<'/v2/fleet/vehicles/{id}/status-history', 'get', 200>['history'][number];

// Telemetry
export type TelemetryRecord = ResponseBody<'/v2/telemetry/{vehicleId}/history', 'get', 200>['records'][number];
export type TelemetryData = TelemetryRecord['data'];
export type LatestTelemetry = ResponseBody<'/v2/telemetry/{vehicleId}', 'get', 200>;
export type TelemetryInput = RequestBody<'/v2/telemetry/{vehicleId}', 'post'>;
export type TelemetryBatch = RequestBody<'/v2/telemetry', 'post'>;
export type IngestResult = ResponseBody<'/v2/telemetry/{vehicleId}', 'post', 202>;

// Events and webhooks
/**
 * An event: one type per `type`, so `if (event.type === 'alert.opened')` narrows `event.data` to the
 * alert. `report.ready` and `webhook.test` have no `vehicleId`; it reads as `undefined` there, so code reading
 * `event.vehicleId` on any event compiles. Receivers must ignore types they do not know.
 */
export type FleetEvent = WithVehicleId<ResponseBody<'/v2/events', 'get', 200>['events'][number]>;
type WithVehicleId<E> = E extends { vehicleId: string } ? E : E & { vehicleId?: undefined };
/** The event of type `T`, narrowed. */
export type FleetEventOf<T extends FleetEvent['type']> = Extract<FleetEvent, { type: T }>;
export type EventType = FleetEvent['type'];
export type EventPage = ResponseBody<'/v2/events', 'get', 200>;
export type Webhook = ResponseBody<'/v2/webhooks/{id}', 'get', 200>;
export type CreatedWebhook = ResponseBody<'/v2/webhooks', 'post', 201>;
export type WebhookDelivery = ResponseBody<'/v2/webhooks/{id}/deliveries', 'get', 200>['deliveries'][number];

// Geofences and alerts
export type Geofence = ResponseBody<'/v2/geofences/{id}', 'get', 200>;
export type AlertRule = ResponseBody<'/v2/alert-rules/{id}', 'get', 200>;
export type Alert = ResponseBody<'/v2/alerts/{id}', 'get', 200>;

// Credentials, organizations, devices
export type ApiKey = ResponseBody<'/v2/api-keys/{id}', 'get', 200>;
export type Organization = ResponseBody<'/v2/organizations/{id}', 'get', 200>;
export type Device = ResponseBody<'/v2/devices/{id}', 'get', 200>;

// Live streams
export type CreatedStream = ResponseBody<'/v2/telemetry/{vehicleId}/stream', 'post', 201>;
export type StreamDetails = ResponseBody<'/v2/streams/{streamId}', 'get', 200>;
export type StreamTicket = ResponseBody<'/v2/streams/{streamId}/tickets', 'post', 200>;
export type StreamEventType = CreatedStream['subscriptions'][number];
export type VehicleStreamRequest = RequestBody<'/v2/telemetry/{vehicleId}/stream', 'post'>;
export type FleetStreamRequest = RequestBody<'/v2/telemetry/stream', 'post'>;

/** An RFC 9457 problem, as every error of the API is answered (the OAuth endpoints excepted). */
export type Problem = paths['/v2/fleet/vehicles/{id}']['get']['responses'][404]['content']['application/problem+json'];
