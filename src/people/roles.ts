// The four roles of a user and the scopes each gives (docs/API.md "Users and sessions").
import { SCOPES, type Scope } from '../auth/scopes.ts';

export const ROLES = ['admin', 'manager', 'operator', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

const VIEWER: readonly Scope[] = ['fleet:read', 'telemetry:read', 'streams', 'events:read'];
const OPERATOR: readonly Scope[] = [...VIEWER, 'alerts:write', 'commands', 'dispatch'];
const MANAGER: readonly Scope[] = [...OPERATOR, 'fleet:write', 'rules'];

export const ROLE_SCOPES: Record<Role, readonly Scope[]> = {
  admin: SCOPES,
  manager: MANAGER,
  operator: OPERATOR,
  viewer: VIEWER,
};

/** Highest first: the order in which a role outranks another. */
export function roleRank(role: Role): number {
  return ROLES.length - ROLES.indexOf(role);
}
