// Alert rule and alert schemas: they validate requests, serialize responses and make the OpenAPI
// document. Geofences have theirs in geofences/schema.ts.
import { Type, type Static } from 'typebox';
import { GeofenceId, Name, VehicleIds } from '../geofences/schema.ts';
import { IsoTimestamp, Paging, PlainText, commaListPattern } from '../schema/common.ts';
import { Location, VehicleId } from '../vehicles/schema.ts';
import { THRESHOLD_FIELDS } from './model.ts';
import { named } from '../schema/named.ts';

const RuleIdSchema = Type.String({ pattern: '^rule_[A-Za-z0-9]{1,64}$', examples: ['rule_9xY2mQ4kT9bW3cZ7nLp1'] });
const AlertIdSchema = Type.String({ pattern: '^alert_[A-Za-z0-9]{1,64}$', examples: ['alert_2Xb8kQ0mWc1ZrT5pLs9a'] });

export const RuleIdParams = Type.Object({ id: RuleIdSchema }, { additionalProperties: false });
export const AlertIdParams = Type.Object({ id: AlertIdSchema }, { additionalProperties: false });
export const PageQuery = Type.Object(Paging, { additionalProperties: false });
export type PageQuery = Static<typeof PageQuery>;

const Field = Type.Union([
  Type.Enum(THRESHOLD_FIELDS),
  Type.String({ pattern: '^diagnostics\\.[a-zA-Z][a-zA-Z0-9_.-]{0,63}$', description: '`diagnostics.<key>`' }),
]);
const ForSeconds = Type.Integer({ minimum: 0, maximum: 604_800, description: 'How long the condition must hold, in record time, before the alert opens (default 0).' });

export const Condition = named('AlertCondition', Type.Union([
  Type.Object({
    kind: Type.Literal('threshold'),
    field: Field,
    op: Type.Enum(['>', '>=', '<', '<=', '==', '!=']),
    value: Type.Union([Type.Number(), Type.String({ maxLength: 256 }), Type.Boolean()], { description: 'A number; for diagnostics also a string or boolean (with == or !=).' }),
    forSeconds: Type.Optional(ForSeconds),
  }, { additionalProperties: false }),
  Type.Object({
    kind: Type.Literal('offline'),
    afterSeconds: Type.Integer({ minimum: 60, maximum: 604_800, description: 'No telemetry for this long.' }),
  }, { additionalProperties: false }),
  Type.Object({
    kind: Type.Literal('geofence'),
    geofenceId: GeofenceId,
    when: Type.Enum(['inside', 'outside']),
    forSeconds: Type.Optional(ForSeconds),
  }, { additionalProperties: false }),
], { examples: [{ kind: 'threshold', field: 'speed', op: '>', value: 90, forSeconds: 30 }] }), 'When an alert opens.');

export const RuleBody = named('AlertRuleInput', Type.Object(
  { name: Name, condition: Condition, vehicleIds: Type.Optional(VehicleIds), enabled: Type.Optional(Type.Boolean({ default: true })) },
  { additionalProperties: false, examples: [{ name: 'Speeding', condition: { kind: 'threshold', field: 'speed', op: '>', value: 90, forSeconds: 30 } }] },
), 'An alert rule to create, or its new definition.');
export type RuleBody = Static<typeof RuleBody>;

export const Rule = named('AlertRule', Type.Object(
  {
    id: RuleIdSchema, name: Type.String(), condition: Condition, vehicleIds: Type.Union([Type.Array(Type.String()), Type.Null()]),
    enabled: Type.Boolean(), createdAt: IsoTimestamp, updatedAt: IsoTimestamp,
  },
  { additionalProperties: false },
), 'An alert rule.');
export const RuleList = named('AlertRuleList', Type.Object(
  { alertRules: Type.Array(Rule), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer() },
  { additionalProperties: false },
), 'A page of alert rules.');

const AlertStatus = Type.Enum(['open', 'acknowledged', 'resolved']);
const alertFields = {
  id: AlertIdSchema, ruleId: Type.String(), ruleName: Type.String(), vehicleId: Type.String(), status: AlertStatus,
  openedAt: IsoTimestamp,
  acknowledgedAt: Type.Union([IsoTimestamp, Type.Null()]), acknowledgedBy: Type.Union([Type.String(), Type.Null()]),
  resolvedAt: Type.Union([IsoTimestamp, Type.Null()]),
  resolvedBy: Type.Union([Type.String(), Type.Null()], { description: 'A credential id, or `system` when the condition ended.' }),
  trigger: Type.Object({ timestamp: IsoTimestamp, value: Type.Union([Type.Number(), Type.String(), Type.Boolean(), Location, Type.Null()]) }, { additionalProperties: false }),
};
export const Alert = named('Alert', Type.Object(alertFields, { additionalProperties: false }), 'An alert: a rule\'s condition holding for one vehicle.');
/** The data of `alert.*` events: the alert, and the note of a change made by hand. */
export const AlertEventData = named('AlertEventData', Type.Object(
  { ...alertFields, note: Type.Optional(Type.String({ description: 'The note given with an acknowledgement or resolution made by hand.' })) },
  { additionalProperties: false },
), 'The alert as it is after the change the event records.');
export const AlertListQuery = Type.Object(
  {
    status: Type.Optional(Type.String({ pattern: commaListPattern(['open', 'acknowledged', 'resolved']), description: 'One status or several, comma-separated.' })),
    vehicleId: Type.Optional(VehicleId),
    ruleId: Type.Optional(RuleIdSchema),
    limit: Paging.limit,
    cursor: Type.Optional(Type.String({ maxLength: 100, description: 'The `nextCursor` of the previous page.' })),
  },
  { additionalProperties: false },
);
export type AlertListQuery = Static<typeof AlertListQuery>;
export const AlertList = named('AlertList', Type.Object(
  { alerts: Type.Array(Alert, { description: 'Newest first.' }), nextCursor: Type.Union([Type.String(), Type.Null()]) },
  { additionalProperties: false },
), 'A page of alerts.');
export const AlertActionBody = named('AlertAction', Type.Union([
  Type.Object({ note: Type.Optional(PlainText({ maxLength: 500, multiline: true })) }, { additionalProperties: false }),
  Type.Null(),
], { description: 'Optional; `{note}` is kept in the alert\'s event.' }));
export type AlertActionBody = Static<typeof AlertActionBody>;
