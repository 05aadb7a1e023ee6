// The action and resource of each audited route, by operationId: one table, so that a route added
// without its line is caught by the test that walks the route table (test/audit.test.ts).
// `id`: where the resource's id is: a path parameter, a body member, the principal's own user (an
// account route), or `new:<prefix>`, the first id of that kind the request makes (a creation).

export interface AuditAction {
  action: string;
  resource: string;
  id?: `param:${string}` | `body:${string}` | `new:${string}` | 'self';
  /** Written at the response, not with a transaction: a sign-in's own writes are bookkeeping. */
  atResponse?: true;
}

const table = {
  registerVehicle: { action: 'vehicle.created', resource: 'vehicle', id: 'body:vehicleId' },
  v1RegisterVehicle: { action: 'vehicle.created', resource: 'vehicle', id: 'body:vehicleId' },
  registerVehicles: { action: 'vehicle.batch_created', resource: 'vehicle' },
  updateVehicle: { action: 'vehicle.updated', resource: 'vehicle', id: 'param:id' },
  deleteVehicle: { action: 'vehicle.deleted', resource: 'vehicle', id: 'param:id' },
  changeVehicleStatus: { action: 'vehicle.status_changed', resource: 'vehicle', id: 'param:id' },
  v1ChangeVehicleStatus: { action: 'vehicle.status_changed', resource: 'vehicle', id: 'param:id' },
  createWebhook: { action: 'webhook.created', resource: 'webhook', id: 'new:wh' },
  updateWebhook: { action: 'webhook.updated', resource: 'webhook', id: 'param:id' },
  deleteWebhook: { action: 'webhook.deleted', resource: 'webhook', id: 'param:id' },
  rotateWebhookSecret: { action: 'webhook.secret_rotated', resource: 'webhook', id: 'param:id' },
  testWebhook: { action: 'webhook.tested', resource: 'webhook', id: 'param:id' },
  retryWebhookDelivery: { action: 'webhook.delivery_retried', resource: 'webhook', id: 'param:id' },
  createGeofence: { action: 'geofence.created', resource: 'geofence', id: 'new:gf' },
  replaceGeofence: { action: 'geofence.replaced', resource: 'geofence', id: 'param:id' },
  deleteGeofence: { action: 'geofence.deleted', resource: 'geofence', id: 'param:id' },
  createAlertRule: { action: 'alert_rule.created', resource: 'alertRule', id: 'new:rule' },
  replaceAlertRule: { action: 'alert_rule.replaced', resource: 'alertRule', id: 'param:id' },
  deleteAlertRule: { action: 'alert_rule.deleted', resource: 'alertRule', id: 'param:id' },
  acknowledgeAlert: { action: 'alert.acknowledged', resource: 'alert', id: 'param:id' },
  resolveAlert: { action: 'alert.resolved', resource: 'alert', id: 'param:id' },
  createApiKey: { action: 'api_key.created', resource: 'apiKey', id: 'new:key' },
  revokeApiKey: { action: 'api_key.revoked', resource: 'apiKey', id: 'param:id' },
  createOrganization: { action: 'organization.created', resource: 'organization', id: 'new:org' },
  createUser: { action: 'user.invited', resource: 'user', id: 'new:usr' },
  updateUser: { action: 'user.updated', resource: 'user', id: 'param:id' },
  deleteUser: { action: 'user.deleted', resource: 'user', id: 'param:id' },
  reinviteUser: { action: 'user.reinvited', resource: 'user', id: 'param:id' },
  signIn: { action: 'session.login', resource: 'session', atResponse: true },
  acceptInvitation: { action: 'user.invitation_accepted', resource: 'user', atResponse: true },
  signOut: { action: 'session.logout', resource: 'session', id: 'self' },
  changePassword: { action: 'user.password_changed', resource: 'user', id: 'self' },
  beginTotp: { action: 'user.totp_started', resource: 'user', id: 'self' },
  confirmTotp: { action: 'user.totp_enabled', resource: 'user', id: 'self' },
  disableTotp: { action: 'user.totp_disabled', resource: 'user', id: 'self' },
  putSso: { action: 'sso.configured', resource: 'sso' },
  deleteSso: { action: 'sso.removed', resource: 'sso' },
  finishSso: { action: 'session.sso_login', resource: 'session', atResponse: true },
  registerDevice: { action: 'device.created', resource: 'device', id: 'new:dev' },
  deleteDevice: { action: 'device.deleted', resource: 'device', id: 'param:id' },
  createOAuthClient: { action: 'oauth_client.created', resource: 'oauthClient', id: 'new:oc' },
  deleteOAuthClient: { action: 'oauth_client.deleted', resource: 'oauthClient', id: 'param:id' },
  rotateOAuthSigningKey: { action: 'oauth.signing_key_rotated', resource: 'oauthSigningKey' },
  createVehicleStream: { action: 'stream.created', resource: 'stream', id: 'new:str' },
  createFleetStream: { action: 'stream.created', resource: 'stream', id: 'new:str' },
  deleteStream: { action: 'stream.deleted', resource: 'stream', id: 'param:streamId' },
  createGroup: { action: 'group.created', resource: 'group', id: 'new:grp' },
  updateGroup: { action: 'group.updated', resource: 'group', id: 'param:id' },
  deleteGroup: { action: 'group.deleted', resource: 'group', id: 'param:id' },
  addGroupVehicles: { action: 'group.vehicles_added', resource: 'group', id: 'param:id' },
  removeGroupVehicle: { action: 'group.vehicle_removed', resource: 'group', id: 'param:id' },
  sendCommand: { action: 'command.created', resource: 'command', id: 'new:cmd' },
  cancelCommand: { action: 'command.cancelled', resource: 'command', id: 'param:id' },
  createDriver: { action: 'driver.created', resource: 'driver', id: 'new:drv' },
  updateDriver: { action: 'driver.updated', resource: 'driver', id: 'param:id' },
  deleteDriver: { action: 'driver.deleted', resource: 'driver', id: 'param:id' },
  assignDriver: { action: 'driver_assignment.created', resource: 'driverAssignment', id: 'new:asg' },
  endDriverAssignment: { action: 'driver_assignment.ended', resource: 'driverAssignment', id: 'param:id' },
  setVehicleMeters: { action: 'vehicle.meters_set', resource: 'vehicle', id: 'param:id' },
  createMaintenanceSchedule: { action: 'maintenance_schedule.created', resource: 'maintenanceSchedule', id: 'new:mnt' },
  replaceMaintenanceSchedule: { action: 'maintenance_schedule.replaced', resource: 'maintenanceSchedule', id: 'param:id' },
  deleteMaintenanceSchedule: { action: 'maintenance_schedule.deleted', resource: 'maintenanceSchedule', id: 'param:id' },
  createServiceRecord: { action: 'service_record.created', resource: 'serviceRecord', id: 'new:svc' },
  createReportSchedule: { action: 'report_schedule.created', resource: 'reportSchedule', id: 'new:rps' },
  replaceReportSchedule: { action: 'report_schedule.replaced', resource: 'reportSchedule', id: 'param:id' },
  deleteReportSchedule: { action: 'report_schedule.deleted', resource: 'reportSchedule', id: 'param:id' },
  runReportSchedule: { action: 'report_schedule.run', resource: 'reportSchedule', id: 'param:id' },
  createStreamTicket: { action: 'stream.ticket_issued', resource: 'stream', id: 'param:streamId' },
} as const satisfies Record<string, AuditAction>;

/** Changes not audited: telemetry ingestion (by HTTP and the devices' own protocols). */
export const NOT_AUDITED: ReadonlySet<string> = new Set(['ingestVehicleTelemetry', 'ingestFleetTelemetry', 'osmandReportPost']);

/** Every operationId the table names. */
export const AUDITED_OPERATIONS: readonly string[] = Object.keys(table);

export function auditActionOf(operationId: string | undefined): AuditAction | undefined {
  return operationId === undefined ? undefined : (table as Record<string, AuditAction>)[operationId];
}
