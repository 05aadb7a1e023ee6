export const SCOPES = [
  'fleet:read',
  'fleet:write',
  'telemetry:read',
  'telemetry:write',
  'streams',
  'admin',
  'events:read',
  'rules',
  'webhooks',
  'metrics:read',
  'users',
  'audit:read',
  'commands',
  'dispatch',
  'alerts:write',
] as const;

export type Scope = (typeof SCOPES)[number];

/** What each scope allows, as the OpenAPI document and the OAuth metadata describe it. */
export const SCOPE_DESCRIPTIONS: Record<Scope, string> = {
  'fleet:read': 'Read vehicles, their status history, devices, geofences and alert rules.',
  'fleet:write': 'Register, change and delete vehicles and devices.',
  'telemetry:read': 'Read the latest telemetry, its history and the reports computed from it (trips, stops, aggregates, exports).',
  'telemetry:write': 'Send telemetry.',
  streams: 'Create, read, attach to and end live streams (each event type also needs its own read scope).',
  admin: 'Manage the organization\'s API keys and OAuth clients; for the platform organization also organizations and signing keys. Includes `metrics:read`.',
  'events:read': 'Read the event feed and alerts.',
  rules: 'Create, change and delete geofences, alert rules and report schedules; acknowledge and resolve alerts; run report schedules.',
  webhooks: 'Manage webhook endpoints and their deliveries.',
  'metrics:read': 'Read the Prometheus metrics (platform organization only).',
  users: 'Manage the organization\'s users: invite, change roles, disable, delete.',
  'audit:read': 'Read the organization\'s audit log.',
  commands: 'Send and cancel device commands.',
  dispatch: 'Assign drivers to vehicles.',
  'alerts:write': 'Acknowledge and resolve alerts (`rules` allows it too).',
};

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/** Who is calling: resolved once per request by the auth plugin, passed to every service call. */
export interface Principal {
  organizationId: string;
  /** The credential's id, recorded as `by` in audit trails such as the status history. */
  credentialId: string;
  /** The credential's name (a key's, a client's, a person's), as the audit log shows who acted. */
  name?: string;
  scopes: ReadonlySet<Scope>;
  /** The organization created on first start operates the service itself (metrics, organizations). */
  platform: boolean;
  /**
   * When the credential stops being valid (ms since the epoch): an API key's `expiresAt`, an
   * access token's `exp`. Absent: it does not expire. What lives on after the request (a live
   * stream) ends then.
   */
  expiresAt?: number;
  /** Set when the credential is a person's session cookie (people/service.ts): what CSRF checks and sign-out need. */
  session?: { idHash: string; csrfToken: string; userId: string };
  /**
   * Set when the credential is limited to vehicle groups (docs/API.md "Scoped credentials"): it sees
   * a vehicle only while the vehicle is in one of these groups (groups/scope.ts). Absent: the
   * whole organization.
   */
  groupIds?: readonly string[];
}

/**
 * Scopes that act on the whole organization rather than on vehicles (its credentials, people,
 * webhooks, audit log, geofences and alert rules, metrics). A credential limited to groups never
 * holds them: a key or client asking for one is refused, and a person's role gives the rest.
 */
export const ORGANIZATION_WIDE: readonly Scope[] = ['admin', 'users', 'webhooks', 'audit:read', 'rules', 'metrics:read'];

/** The scopes a credential holds: `scopes`, less the organization-wide ones when it is limited to groups. */
export function effectiveScopes(scopes: Iterable<Scope>, groupIds: readonly string[] | null | undefined): ReadonlySet<Scope> {
  const all = new Set(scopes);
  if (groupIds !== null && groupIds !== undefined) for (const scope of ORGANIZATION_WIDE) all.delete(scope);
  return all;
}

/**
 * Scopes another scope includes: `admin` has always been able to read the metrics, and `rules`
 * to acknowledge and resolve alerts.
 */
const INCLUDED_IN: Partial<Record<Scope, Scope>> = { 'metrics:read': 'admin', 'alerts:write': 'rules' };

/** Whether a credential with `scopes` may do what `scope` guards. */
export function holds(scopes: ReadonlySet<Scope>, scope: Scope): boolean {
  if (scopes.has(scope)) return true;
  const wider = INCLUDED_IN[scope];
  return wider !== undefined && scopes.has(wider);
}
