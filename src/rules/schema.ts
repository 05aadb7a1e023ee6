// Geofence, alert rule and alert schemas: they validate requests, serialize responses and make
// the OpenAPI document. The geometry's meaning (closed rings, no self-intersection) is checked by
// geofences/validation.ts after this structural check.
import { Type, type Static } from 'typebox';
import { GeofenceGeometry, PAGE_POSITIONS } from '../geofences/schema.ts';
import { IsoTimestamp, Paging, PlainText, commaListPattern } from '../schema/common.ts';
import { Location, VehicleId } from '../vehicles/schema.ts';
import { THRESHOLD_FIELDS } from './model.ts';
import { named } from '../schema/named.ts';

const Name = PlainText({ minLength: 1, maxLength: 200, description: 'A name people read.' });
const VehicleIds = Type.Union([Type.Array(VehicleId, { maxItems: 1000, uniqueItems: true }), Type.Null()], {
  description: 'The vehicles it applies to; absent or null: every vehicle of the organization.',
});
const GeofenceIdSchema = Type.String({ pattern: '^gf_[A-Za-z0-9]{1,64}$', examples: ['gf_4kTq9ZbW8xYc2LmN4pRs'] });
const RuleIdSchema = Type.String({ pattern: '^rule_[A-Za-z0-9]{1,64}$', examples: ['rule_9xY2mQ4kT9bW3cZ7nLp1'] });
const AlertIdSchema = Type.String({ pattern: '^alert_[A-Za-z0-9]{1,64}$', examples: ['alert_2Xb8kQ0mWc1ZrT5pLs9a'] });

export const GeofenceIdParams = Type.Object({ id: GeofenceIdSchema }, { additionalProperties: false });
export const RuleIdParams = Type.Object({ id: RuleIdSchema }, { additionalProperties: false });
export const AlertIdParams = Type.Object({ id: AlertIdSchema }, { additionalProperties: false });

export const GeofenceBody = named('GeofenceInput', Type.Object(
  { name: Name, geometry: GeofenceGeometry, vehicleIds: Type.Optional(VehicleIds) },
  {
    additionalProperties: false,
    examples: [{ name: 'Depot', geometry: { type: 'Circle', coordinates: [13.405, 52.52], radius: 250 } }],
  },
), 'A geofence to create, or its new definition.');
export type GeofenceBody = Static<typeof GeofenceBody>;

export const Geofence = named('Geofence', Type.Object(
  { id: GeofenceIdSchema, name: Type.String(), geometry: GeofenceGeometry, vehicleIds: Type.Union([Type.Array(Type.String()), Type.Null()]), createdAt: IsoTimestamp, updatedAt: IsoTimestamp },
  { additionalProperties: false },
), 'A geofence.');
export const GeofenceList = named('GeofenceList', Type.Object(
  {
    geofences: Type.Array(Geofence), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer(),
    nextOffset: Type.Union([Type.Integer(), Type.Null()], {
      description: 'The `offset` of the next page, or null on the last. A page also ends early, with fewer than `limit` geofences, '
        + `once their positions would pass ${PAGE_POSITIONS.toLocaleString('en')} (its first geofence is always in it): continue from \`nextOffset\`, not from \`offset + limit\`.`,
    }),
  },
  { additionalProperties: false },
), 'A page of geofences.');
export const PageQuery = Type.Object(Paging, { additionalProperties: false });
export type PageQuery = Static<typeof PageQuery>;
export const VehiclesInside = named('VehiclesInsideGeofence', Type.Object({ vehicleIds: Type.Array(Type.String()) }, { additionalProperties: false }), 'The vehicles inside a geofence now.');
export const GeofencesOfVehicle = named('GeofencesOfVehicle', Type.Object(
  { geofences: Type.Array(Type.Object({ id: Type.String(), name: Type.String() }, { additionalProperties: false })) },
  { additionalProperties: false },
), 'The geofences a vehicle is inside now.');

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
    geofenceId: GeofenceIdSchema,
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
