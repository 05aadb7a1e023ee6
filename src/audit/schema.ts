import { Type, type Static } from 'typebox';
import { IsoTimestamp, LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX } from '../schema/common.ts';
import { named } from '../schema/named.ts';
import { ACTOR_TYPES, OUTCOMES } from './entry.ts';

const Nullable = (description?: string) => Type.Union([Type.String(), Type.Null()], description === undefined ? {} : { description });
const AUDIT_ID = '^aud_[A-Za-z0-9]{20}$';
const Filter = (description: string) => Type.Optional(Type.String({ minLength: 1, maxLength: 255, description }));

export const AuditEntryView = named('AuditEntry', Type.Object({
  id: Type.String({ pattern: AUDIT_ID, examples: ['aud_0kS9xY2b7QfE3mN1pLcT'] }),
  at: IsoTimestamp,
  actor: Type.Object({
    type: Type.Enum(ACTOR_TYPES, { description: '`system`: the service itself (the command line); `anonymous`: no valid credential.' }),
    id: Nullable('The user, API key or OAuth client id (`ext:<subject>` for an external issuer\'s token).'),
    name: Nullable('Its name when the entry was written.'),
  }, { additionalProperties: false }),
  action: Type.String({ description: 'What was done, e.g. `vehicle.created`, `user.updated`, `session.login_failed` (docs/API.md "Audit log" lists them).', examples: ['vehicle.updated'] }),
  method: Type.String(),
  path: Type.String({ description: 'The request path, without its query string.' }),
  status: Type.Integer({ description: 'The response status; for a committed change, the route\'s success status.' }),
  outcome: Type.Enum(OUTCOMES, { description: '`denied`: 401 or 403; `failed`: any other error; `succeeded`: otherwise.' }),
  resource: Type.Object({ type: Nullable('e.g. `vehicle`, `user`, `apiKey`'), id: Nullable() }, { additionalProperties: false }),
  ip: Nullable(),
  userAgent: Nullable(),
  requestId: Nullable('The X-Request-Id of the request (as in the logs).'),
}, { additionalProperties: false }), 'One audited request: who did what to which resource, and how it ended.');

export const AuditQuery = Type.Object({
  from: Type.Optional(Type.String({ format: 'date-time', description: 'Inclusive start.' })),
  to: Type.Optional(Type.String({ format: 'date-time', description: 'Exclusive end.' })),
  actorId: Filter('Entries of this user, API key or OAuth client.'),
  action: Filter('e.g. `vehicle.updated`.'),
  outcome: Type.Optional(Type.Enum(OUTCOMES)),
  resourceType: Filter('e.g. `vehicle`.'),
  resourceId: Filter('With resourceType, one resource\'s entries.'),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: LIST_LIMIT_MAX, default: LIST_LIMIT_DEFAULT, description: 'Page size.' })),
  cursor: Type.Optional(Type.String({ pattern: AUDIT_ID, description: 'From `nextCursor` of the previous page.' })),
}, { additionalProperties: false });
export type AuditQuery = Static<typeof AuditQuery>;

export const AuditPage = named('AuditLogPage', Type.Object({
  entries: Type.Array(AuditEntryView, { description: 'Newest first.' }),
  nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Null on the last page.' }),
}, { additionalProperties: false }), 'A page of the audit log.');
