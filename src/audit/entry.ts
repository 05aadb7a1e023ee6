// What the audit log keeps of one request: who, what, on what, and how it ended (docs/API.md
// "Audit log"). Built from the request alone (its route, principal, path without the query,
// status): no body is read into it, so no secret sent in one can reach it.

export const ACTOR_TYPES = ['user', 'apiKey', 'oauthClient', 'system', 'anonymous'] as const;
export type ActorType = (typeof ACTOR_TYPES)[number];
export const OUTCOMES = ['succeeded', 'denied', 'failed'] as const;
export type Outcome = (typeof OUTCOMES)[number];

export interface AuditActor {
  type: ActorType;
  id: string | null;
  name: string | null;
}

export interface AuditEntry {
  id: string;
  /** null: nobody's (a sign-in naming no known account, an unknown credential); listed to the platform organization. */
  organizationId: string | null;
  at: number;
  actor: AuditActor;
  action: string;
  method: string;
  path: string;
  status: number;
  outcome: Outcome;
  resource: { type: string | null; id: string | null };
  ip: string | null;
  userAgent: string | null;
  requestId: string | null;
}

/** Filters of `GET /v2/audit-log`; all optional, `from` inclusive, `to` exclusive (ms). */
export interface AuditFilter {
  from?: number;
  to?: number;
  actorId?: string;
  action?: string;
  outcome?: Outcome;
  resourceType?: string;
  resourceId?: string;
}

/** 401 and 403 are refusals; any other status of 400 or more a failure. */
export function outcomeOf(status: number): Outcome {
  if (status === 401 || status === 403) return 'denied';
  return status >= 400 ? 'failed' : 'succeeded';
}

/** The actor a credential id names, by the kind its prefix gives. */
export function actorTypeOf(credentialId: string): ActorType {
  if (credentialId.startsWith('usr_')) return 'user';
  if (credentialId.startsWith('key_')) return 'apiKey';
  if (credentialId.startsWith('oc_') || credentialId.startsWith('ext:')) return 'oauthClient';
  return 'system';
}
