// The service's closed lists that the pages offer as choices, mirrored from its sources so the
// browser needs nothing from them; test/dashboard-manage.test.ts checks that each agrees with the
// server's. No DOM here, so the test can import it.

/** The scopes of docs/API.md "Authentication and scopes". */
export const SCOPES = [
  'fleet:read', 'fleet:write', 'telemetry:read', 'telemetry:write', 'streams', 'admin', 'events:read', 'rules', 'webhooks', 'metrics:read',
  'users', 'audit:read', 'commands', 'dispatch', 'alerts:write',
] as const;

/** A user's roles, highest first (docs/API.md "Users and sessions"). */
export const ROLES = ['admin', 'manager', 'operator', 'viewer'] as const;

/**
 * The event types of the feed and of webhook subscriptions (docs/API.md "Events"). `webhook.test`
 * goes only to the endpoint tested and is not among them.
 */
export const EVENT_TYPES = [
  'vehicle.registered', 'vehicle.updated', 'vehicle.status_changed', 'vehicle.deleted', 'geofence.entered', 'geofence.exited',
  'alert.opened', 'alert.acknowledged', 'alert.resolved', 'trip.started', 'trip.ended',
] as const;

/** The numeric fields a threshold rule can watch (besides `diagnostics.<key>`). */
export const THRESHOLD_FIELDS = ['speed', 'battery', 'temperature', 'odometer', 'heading'] as const;

/** The protocols of docs/API.md "Devices and protocols". */
export const PROTOCOLS = ['osmand', 'teltonika'] as const;
