// Command schemas: they validate requests, serialize responses and make the OpenAPI document.
import { Type, type Static } from 'typebox';
import { IsoTimestamp, commaListPattern } from '../schema/common.ts';
import { named } from '../schema/named.ts';
import { VehicleId } from '../vehicles/schema.ts';
import { CHANNELS, COMMAND_STATUSES, COMMAND_TYPES } from './model.ts';

export const COMMAND_LIST_LIMIT_DEFAULT = 50;
export const COMMAND_LIST_LIMIT_MAX = 200;

export const CommandId = Type.String({ pattern: '^cmd_[A-Za-z0-9]{20}$', description: 'Assigned by the service; later commands sort after earlier ones.', examples: ['cmd_0Nf3kQ2m9Zb7aQx1Lp4W'] });
const CommandTypeSchema = Type.Enum(COMMAND_TYPES, { description: 'What to ask of the device.' });
const ChannelSchema = Type.Enum(CHANNELS, { description: 'How the command reaches the device.' });
const StatusSchema = Type.Enum(COMMAND_STATUSES, {
  description: '`queued` → `sent` → `succeeded` | `failed` | `timed_out`; `queued` → `expired` | `cancelled`; `delivered` is final for OsmAnd, whose devices do not answer.',
});

export const CommandIdParams = Type.Object({ id: CommandId }, { additionalProperties: false });

const Params = Type.Object(
  {
    text: Type.Optional(Type.String({ minLength: 1, maxLength: 512, pattern: '^[\\u0020-\\u007e]*$', description: '`custom`: the text sent to the device (printable ASCII).' })),
    output: Type.Optional(Type.Integer({ minimum: 1, maximum: 4, description: '`outputControl`: the digital output, 1 to 4.' })),
    on: Type.Optional(Type.Boolean({ description: '`outputControl`: switch it on (true) or off.' })),
  },
  { additionalProperties: false, description: '`custom`: `{text}`; `outputControl`: `{output, on}`; the other types take none.' },
);

export const CommandBody = named('CommandRequest', Type.Object(
  {
    type: CommandTypeSchema,
    params: Type.Optional(Params),
    channel: Type.Optional(ChannelSchema),
    expiresInSeconds: Type.Optional(Type.Integer({
      minimum: 10, maximum: 604_800,
      description: 'Not sent after this long, seconds: default 3600; `engineStop` 300 by default and at most 3600.',
    })),
    queue: Type.Optional(Type.Boolean({ description: 'false: answered 409 `device-offline` (and not kept) unless the device is connected now. Default true.' })),
  },
  { additionalProperties: false, examples: [{ type: 'outputControl', params: { output: 2, on: true } }, { type: 'custom', params: { text: 'getinfo' }, queue: false }] },
), 'A command to send to a vehicle\'s device.');
export type CommandBody = Static<typeof CommandBody>;

export const Command = named('Command', Type.Object(
  {
    id: CommandId,
    vehicleId: VehicleId,
    type: CommandTypeSchema,
    params: Params,
    channel: ChannelSchema,
    status: StatusSchema,
    createdAt: IsoTimestamp,
    createdBy: Type.Object(
      { type: Type.String({ description: '`user`, `apiKey` or `oauthClient`.' }), id: Type.String() },
      { additionalProperties: false, description: 'The credential that asked for it.' },
    ),
    expiresAt: IsoTimestamp,
    sentAt: Type.Union([IsoTimestamp, Type.Null()], { description: 'When the device was sent it (MQTT: when a subscriber acknowledged it).' }),
    completedAt: Type.Union([IsoTimestamp, Type.Null()], { description: 'When it reached a final status.' }),
    result: Type.Union([Type.String(), Type.Null()], { description: 'The device\'s answer (`succeeded`).' }),
    error: Type.Union([Type.String(), Type.Null()], { description: 'Why it failed (`failed`, `timed_out`).' }),
  },
  {
    additionalProperties: false,
    examples: [{
      id: 'cmd_0Nf3kQ2m9Zb7aQx1Lp4W', vehicleId: 'van-042', type: 'positionSingle', params: {}, channel: 'teltonika', status: 'succeeded',
      createdAt: '2026-11-28T08:00:00.000Z', createdBy: { type: 'user', id: 'usr_5Yk2Wq9LmT3bV8cN1rXz' }, expiresAt: '2026-11-28T09:00:00.000Z',
      sentAt: '2026-11-28T08:00:00.120Z', completedAt: '2026-11-28T08:00:01.480Z', result: 'GPS:1 Sat:9 Lat:52.520008 Long:13.404954 Alt:34 Speed:0 Dir:0 Date: 2026/11/28 Time: 08:00:01', error: null,
    }],
  },
), 'A command and where it is in its lifecycle.');

export const CommandListQuery = Type.Object(
  {
    status: Type.Optional(Type.String({ pattern: commaListPattern(COMMAND_STATUSES), description: 'One status or several, comma-separated.', examples: ['queued,sent'] })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: COMMAND_LIST_LIMIT_MAX, default: COMMAND_LIST_LIMIT_DEFAULT, description: 'Page size.' })),
    cursor: Type.Optional(Type.String({ maxLength: 100, description: 'The `nextCursor` of the previous page.' })),
  },
  { additionalProperties: false },
);
export type CommandListQuery = Static<typeof CommandListQuery>;

export const CommandList = named('CommandList', Type.Object(
  {
    commands: Type.Array(Command, { description: 'Newest first.' }),
    nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next (older) page; null on the last.' }),
  },
  { additionalProperties: false },
), 'A page of a vehicle\'s commands.');

export const CommandTypes = named('CommandTypes', Type.Object(
  {
    channel: ChannelSchema,
    types: Type.Array(CommandTypeSchema, { description: 'The types this channel carries.' }),
  },
  { additionalProperties: false, examples: [{ channel: 'teltonika', types: [...COMMAND_TYPES] }] },
), 'The channel a command to this vehicle takes by default, and what it can carry.');
