// OsmAnd over HTTP: GET or POST with parameters in the query or a form body, or Traccar Client 9's
// JSON body. Mounted at /osmand on the main port and at / on the OsmAnd port (listener.ts).
//
// The route is public: these apps send no credential, only their device identifier, so the
// identifier is the credential. Whoever knows a registered identifier can send positions for its
// vehicle; docs/API.md "Devices and protocols" says how to choose identifiers that are hard to guess.
import type { FastifyInstance, FastifyReply, FastifySchemaCompiler } from 'fastify';
import type { CommandLink } from '../../commands/channel.ts';
import type { DeviceRecord } from '../../devices/store.ts';
import { Type } from 'typebox';
import { AppError } from '../../errors.ts';
import { responses } from '../../schema/common.ts';
import { validatorCompiler } from '../../schema/validation.ts';
import { IngestResult } from '../../telemetry/schema.ts';
import type { ProtocolIngest } from '../ingest.ts';
import { decodeJson, decodeParameters, type OsmandReport } from './decode.ts';

const FORM = 'application/x-www-form-urlencoded';
const FORM_BODY_LIMIT = 64 * 1024;

const Parameters = Type.Object(
  {
    id: Type.Optional(Type.String({ description: 'The device identifier (or `deviceid`).' })),
    deviceid: Type.Optional(Type.String()),
    lat: Type.Optional(Type.String({ description: 'Latitude, decimal degrees.' })),
    lon: Type.Optional(Type.String({ description: 'Longitude, decimal degrees.' })),
    timestamp: Type.Optional(Type.String({ description: 'Unix seconds, Unix milliseconds or ISO 8601; default: the time received.' })),
    speed: Type.Optional(Type.String({ description: 'Knots; negative: unknown.' })),
    bearing: Type.Optional(Type.String({ description: 'Degrees (or `heading`); negative: unknown.' })),
    heading: Type.Optional(Type.String()),
    altitude: Type.Optional(Type.String({ description: 'Metres; kept in diagnostics.' })),
    accuracy: Type.Optional(Type.String({ description: 'Metres; kept in diagnostics.' })),
    batt: Type.Optional(Type.String({ description: 'Battery, percent; negative: unknown.' })),
  },
  { additionalProperties: true, description: 'Any other scalar parameter is kept in diagnostics.' },
);

const JsonReport = Type.Object(
  {
    device_id: Type.String(),
    location: Type.Unknown({ description: '`{timestamp, coords: {latitude, longitude, speed (m/s), heading, altitude, accuracy}, battery: {level (0 to 1)}, odometer (m)}`, or an array of them.' }),
  },
  { description: 'Traccar Client 9.' },
);

/** The decoders judge the parameters and bodies themselves (unknown parameters are data here). */
const checkedByDecoder: FastifySchemaCompiler<unknown> = (context) =>
  context.httpPart === 'body' || context.httpPart === 'querystring' ? () => true : validatorCompiler(context);

/** A parsed form body, told apart from any JSON body by its class. */
class FormBody {
  readonly params: Record<string, string | string[]> = {};
  constructor(text: string) {
    for (const [name, value] of new URLSearchParams(text)) {
      const seen = this.params[name];
      this.params[name] = seen === undefined ? value : [seen, value].flat();
    }
  }
}

function report(query: Record<string, unknown>, body: unknown): OsmandReport {
  if (body === undefined || body === null) return decodeParameters(query, 'query');
  if (body instanceof FormBody) {
    const form = body.params;
    const clash = Object.keys(form).find((name) => name in query);
    if (clash !== undefined) {
      throw new AppError('validation-failed', `Parameter "${clash.slice(0, 64)}" is in both the query and the body.`, {
        errors: [{ in: 'body', path: `/${clash.slice(0, 64)}`, message: 'is also in the query' }],
      });
    }
    return decodeParameters({ ...query, ...form }, Object.keys(form).length > 0 ? 'body' : 'query');
  }
  return decodeJson(body);
}

/** The text of the vehicle's oldest queued OsmAnd command, now delivered; undefined when there is none. */
async function nextCommand(commands: CommandLink, device: DeviceRecord): Promise<string | undefined> {
  for (const command of await commands.queued(device.organizationId, device.vehicleId, 'osmand')) {
    const delivered = await commands.deliver(command);
    if (delivered !== undefined) return (delivered.params as { text: string }).text;
  }
  return undefined;
}

export async function osmandRoutes(app: FastifyInstance, opts: { path: string; ingest: ProtocolIngest; commands?: CommandLink }) {
  const { ingest, commands } = opts;
  app.addContentTypeParser(FORM, { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT }, (_request, body, done) => {
    done(null, new FormBody(body as string));
  });

  // The decoder judges the parameters (the route's schema documents them): typed as what
  // Fastify's query string parser makes, a record of text.
  type Request = { Querystring: Record<string, unknown> };
  const handler = async (request: { query: Record<string, unknown>; body: unknown; socket: { remoteAddress?: string } }, reply: FastifyReply) => {
    const decoded = report(request.query, request.body);
    const admission = await ingest.admit('osmand', decoded.identifier, request.socket.remoteAddress);
    switch (admission.status) {
      case 'held-back': {
        // Too many unknown identifiers from this address (../guard.ts).
        const wait = admission.retryAfterSeconds;
        throw new AppError('rate-limited', `Too many unknown device identifiers from this address; try again in ${wait} s.`, {
          headers: { 'retry-after': String(wait) },
        });
      }
      case 'unknown':
        throw new AppError('device-not-found', `No OsmAnd device "${decoded.identifier}" is registered.`);
      case 'admitted': {
        const result = await ingest.ingest(admission.device, decoded.records);
        const command = commands === undefined ? undefined : await nextCommand(commands, admission.device);
        if (command === undefined) return result;
        // The device's next request is answered with its oldest queued command (OsmAnd has no other way back).
        return reply.type('text/plain; charset=utf-8').send(command);
      }
    }
  };

  const schema = (method: 'GET' | 'POST') => ({
    tags: ['devices'],
    operationId: method === 'GET' ? 'osmandReportGet' : 'osmandReportPost',
    summary: `OsmAnd report (${method})`,
    description:
      'For OsmAnd and Traccar Client: no credential, the registered device identifier is the credential. ' +
      (method === 'POST' ? 'Parameters in the query or an `application/x-www-form-urlencoded` body, or Traccar Client 9\'s JSON body. ' : '') +
      'Answered 200 once the record is durably committed; 404 for an identifier no device is registered with; 409 for a retired vehicle. ' +
      'When a command is queued for the device\'s vehicle (channel `osmand`), the 200 carries the oldest one\'s text as a `text/plain` body instead, and that command is `delivered`.',
    security: [],
    querystring: Parameters,
    ...(method === 'POST' ? { body: JsonReport, consumes: ['application/json', FORM] } : {}),
    response: responses({ 200: IngestResult }, { authenticated: false, body: method === 'POST', errors: [400, 404, 409, 429, 500, 503] }),
  });
  const config = { public: true } as const;
  app.get<Request>(opts.path, { config, validatorCompiler: checkedByDecoder, schema: schema('GET') }, handler);
  app.post<Request>(opts.path, { config, validatorCompiler: checkedByDecoder, schema: schema('POST') }, handler);
}
