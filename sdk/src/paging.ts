// Async iterators over the paged lists. Three shapes of paging, as the API has them:
// - offset: `{<items>, total, limit, offset}` (vehicles, status history, webhooks, geofences,
//   alert rules, API keys, organizations, devices): the next page starts at offset + items read,
//   until `total` is reached or a page comes back empty;
// - cursor: `{<items>, nextCursor}` (telemetry history and alerts take it back as `cursor`,
//   webhook deliveries as `after`), until `nextCursor` is null;
// - the event feed: `{events, next}`, `next` never null (see events.ts).
// Each page is one request, made when the loop asks for more; breaking out of the loop stops.
import type { Client } from 'openapi-fetch';
import { fail } from './errors.ts';
import type {
  Alert, AlertRule, ApiKey, Device, Geofence, Organization, QueryParams, StatusChange, TelemetryRecord, VehicleListItem,
  Webhook, WebhookDelivery, paths,
} from './types.ts';

type AnyClient = Client<paths>;

/** GET `path` with path and query parameters; the JSON body, or a FleetApiError. */
async function getPage<T>(client: AnyClient, path: keyof paths, params: { path?: Record<string, string>; query?: object }): Promise<T> {
  const get = client.GET as unknown as (p: string, init: { params: typeof params }) => Promise<{ data?: T; error?: unknown; response: Response }>;
  const { data, error, response } = await get(path, { params });
  if (!response.ok) fail(response, error);
  return data as T;
}

async function* offsetPaged<T>(
  client: AnyClient, path: keyof paths, key: string, query: { limit?: number; offset?: number }, pathParams?: Record<string, string>,
): AsyncGenerator<T, void, undefined> {
  let offset = query.offset ?? 0;
  for (;;) {
    const page = await getPage<Record<string, unknown> & { total: number }>(client, path, {
      ...(pathParams === undefined ? {} : { path: pathParams }),
      query: { ...query, offset },
    });
    const items = page[key] as T[];
    yield* items;
    offset += items.length;
    if (items.length === 0 || offset >= page.total) return;
  }
}

async function* cursorPaged<T>(
  client: AnyClient, path: keyof paths, key: string, cursorParam: 'cursor' | 'after', query: object, pathParams?: Record<string, string>,
): AsyncGenerator<T, void, undefined> {
  let cursor: string | null | undefined = (query as Record<string, unknown>)[cursorParam] as string | undefined;
  do {
    const page: Record<string, unknown> & { nextCursor: string | null } = await getPage(client, path, {
      ...(pathParams === undefined ? {} : { path: pathParams }),
      query: { ...query, ...(cursor === undefined || cursor === null ? {} : { [cursorParam]: cursor }) },
    });
    yield* page[key] as T[];
    cursor = page.nextCursor;
  } while (cursor !== null);
}


/** Iterators over every paged list; `limit` is the page size, and a given offset or cursor is where to start. */
export function paginators(client: AnyClient) {
  return {
    vehicles: (query: QueryParams<'/v2/fleet/vehicles'> = {}) =>
      offsetPaged<VehicleListItem>(client, '/v2/fleet/vehicles', 'vehicles', query),
    statusHistory: (vehicleId: string, query: QueryParams<'/v2/fleet/vehicles/{id}/status-history'> = {}) =>
      offsetPaged<StatusChange>(client, '/v2/fleet/vehicles/{id}/status-history', 'history', query, { id: vehicleId }),
    webhooks: (query: QueryParams<'/v2/webhooks'> = {}) => offsetPaged<Webhook>(client, '/v2/webhooks', 'webhooks', query),
    geofences: (query: QueryParams<'/v2/geofences'> = {}) => offsetPaged<Geofence>(client, '/v2/geofences', 'geofences', query),
    alertRules: (query: QueryParams<'/v2/alert-rules'> = {}) => offsetPaged<AlertRule>(client, '/v2/alert-rules', 'alertRules', query),
    apiKeys: (query: QueryParams<'/v2/api-keys'> = {}) => offsetPaged<ApiKey>(client, '/v2/api-keys', 'apiKeys', query),
    organizations: (query: QueryParams<'/v2/organizations'> = {}) =>
      offsetPaged<Organization>(client, '/v2/organizations', 'organizations', query),
    devices: (query: QueryParams<'/v2/devices'> = {}) => offsetPaged<Device>(client, '/v2/devices', 'devices', query),
    /** Telemetry records in time order. */
    history: (vehicleId: string, query: QueryParams<'/v2/telemetry/{vehicleId}/history'> = {}) =>
      cursorPaged<TelemetryRecord>(client, '/v2/telemetry/{vehicleId}/history', 'records', 'cursor', query, { vehicleId }),
    /** Alerts, newest first. */
    alerts: (query: QueryParams<'/v2/alerts'> = {}) => cursorPaged<Alert>(client, '/v2/alerts', 'alerts', 'cursor', query),
    /** Delivery attempts of one webhook endpoint, newest first. */
    deliveries: (webhookId: string, query: QueryParams<'/v2/webhooks/{id}/deliveries'> = {}) =>
      cursorPaged<WebhookDelivery>(client, '/v2/webhooks/{id}/deliveries', 'deliveries', 'after', query, { id: webhookId }),
  };
}

export type Paginators = ReturnType<typeof paginators>;
