// The service's closed lists that the pages offer as choices, mirrored from its sources so the
// browser needs nothing from them; test/dashboard-manage.test.ts and test/dashboard-audit.test.ts
// check that each agrees with the server's. No DOM here, so the test can import it.

/** The scopes of docs/API.md "Authentication and scopes". */
export const SCOPES = [
  'fleet:read', 'fleet:write', 'telemetry:read', 'telemetry:write', 'streams', 'admin', 'events:read', 'rules', 'webhooks', 'metrics:read',
  'users', 'audit:read', 'commands', 'dispatch', 'alerts:write',
] as const;

/**
 * The scopes that act on the whole organization rather than on vehicles: a credential limited to
 * vehicle groups never holds them (a key asking for one is refused; a person's role gives the rest).
 */
export const ORGANIZATION_WIDE_SCOPES: readonly (typeof SCOPES)[number][] = ['admin', 'users', 'webhooks', 'audit:read', 'rules', 'metrics:read'];

/** A user's roles, highest first (docs/API.md "Users and sessions"). */
export const ROLES = ['admin', 'manager', 'operator', 'viewer'] as const;

/**
 * The event types of the feed and of webhook subscriptions (docs/API.md "Events"). `webhook.test`
 * goes only to the endpoint tested and is not among them.
 */
export const EVENT_TYPES = [
  'vehicle.registered', 'vehicle.updated', 'vehicle.status_changed', 'vehicle.deleted', 'geofence.entered', 'geofence.exited',
  'alert.opened', 'alert.acknowledged', 'alert.resolved', 'trip.started', 'trip.ended',
  'command.queued', 'command.sent', 'command.succeeded', 'command.failed', 'command.timed_out', 'command.expired', 'command.cancelled', 'command.delivered',
  'driver.assigned', 'driver.unassigned', 'driver.unknown',
  'maintenance.due_soon', 'maintenance.overdue', 'maintenance.completed', 'report.ready',
] as const;

/** The numeric fields a threshold rule can watch (besides `diagnostics.<key>`). */
export const THRESHOLD_FIELDS = ['speed', 'battery', 'temperature', 'odometer', 'heading'] as const;

/** The protocols of docs/API.md "Devices and protocols". */
export const PROTOCOLS = ['osmand', 'teltonika'] as const;

/** How an audited request ended (docs/API.md "Audit log"). */
export const AUDIT_OUTCOMES = ['succeeded', 'denied', 'failed'] as const;

/**
 * The actions the audit log records, offered as suggestions for its filter (any text may still be
 * typed): each audited route's action, the `_failed` form of a sign-in's, and those of requests
 * no route names (a rejected credential, a refusal, a path that does not exist, another failure).
 */
export const AUDIT_ACTIONS = [
  'access.denied', 'alert.acknowledged', 'alert.resolved', 'alert_rule.created', 'alert_rule.deleted', 'alert_rule.replaced',
  'api_key.created', 'api_key.revoked', 'command.cancelled', 'command.created', 'credential.rejected', 'device.created', 'device.deleted',
  'driver.created', 'driver.deleted', 'driver.updated', 'driver_assignment.created', 'driver_assignment.ended',
  'geofence.created', 'geofence.deleted', 'geofence.replaced',
  'maintenance_schedule.created', 'maintenance_schedule.deleted', 'maintenance_schedule.replaced',
  'group.created', 'group.deleted', 'group.updated', 'group.vehicle_removed', 'group.vehicles_added', 'oauth.signing_key_rotated', 'oauth_client.created', 'oauth_client.deleted',
  'organization.created', 'report_schedule.created', 'report_schedule.deleted', 'report_schedule.replaced', 'report_schedule.run', 'request.failed', 'request.not_found',
  'session.login', 'session.login_failed', 'session.logout', 'session.sso_login', 'session.sso_login_failed',
  'service_record.created', 'sso.configured', 'sso.removed', 'stream.created', 'stream.deleted', 'stream.ticket_issued',
  'user.deleted', 'user.invitation_accepted', 'user.invitation_accepted_failed', 'user.invited', 'user.password_changed', 'user.reinvited',
  'user.totp_disabled', 'user.totp_enabled', 'user.totp_started', 'user.updated',
  'vehicle.batch_created', 'vehicle.created', 'vehicle.deleted', 'vehicle.meters_set', 'vehicle.status_changed', 'vehicle.updated',
  'webhook.created', 'webhook.deleted', 'webhook.delivery_retried', 'webhook.secret_rotated', 'webhook.tested', 'webhook.updated',
] as const;

/** The kinds of resource an audit entry names. */
export const AUDIT_RESOURCE_TYPES = [
  'alert', 'alertRule', 'apiKey', 'command', 'device', 'driver', 'driverAssignment', 'geofence', 'group', 'maintenanceSchedule', 'oauthClient', 'oauthSigningKey', 'organization', 'reportSchedule', 'serviceRecord', 'session', 'sso', 'stream',
  'user', 'vehicle', 'webhook',
] as const;
