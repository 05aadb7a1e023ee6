export const SCOPES = [
  'fleet:read',
  'fleet:write',
  'telemetry:read',
  'telemetry:write',
  'streams',
  'admin',
  'events:read',
] as const;

export type Scope = (typeof SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/** Who is calling: resolved once per request by the auth plugin, passed to every service call. */
export interface Principal {
  organizationId: string;
  /** The credential's id, recorded as `by` in audit trails such as the status history. */
  credentialId: string;
  scopes: ReadonlySet<Scope>;
  /** The organization created on first start operates the service itself (metrics, organizations). */
  platform: boolean;
  /**
   * When the credential stops being valid (ms since the epoch): an API key's `expiresAt`, an
   * access token's `exp`. Absent: it does not expire. What lives on after the request (a live
   * stream) ends then.
   */
  expiresAt?: number;
}
