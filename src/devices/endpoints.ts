// GET /v2/device-endpoints: where devices reach this process, so that a client (the simulator, a
// provisioning tool) sends where this service listens instead of guessing from the usual ports.
// Each answer is what this process listens on now: a listener that is off, or could not bind its
// port, is null. A listener on every address (0.0.0.0, ::) is named by the host of
// FLEET_PUBLIC_URL; one on a given address by that address.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { MqttConfig } from '../config.ts';
import { responses } from '../schema/common.ts';
import { named } from '../schema/named.ts';

/** What a listener reports while it listens. */
interface Listening {
  address?(): { host: string; port: number } | undefined;
}

const WILDCARDS = new Set(['', '0.0.0.0', '::', '[::]', '::0', '0:0:0:0:0:0:0:0']);

const MqttEndpoint = Type.Object(
  {
    url: Type.String({ description: '`mqtt://host:port` (or `mqtts://`), without credentials.', examples: ['mqtt://fleet.example.com:1883'] }),
    broker: Type.Union([Type.Literal('embedded'), Type.Literal('external')], {
      description:
        '`embedded`: this service\'s own listener; log in with a `telemetry:write` key, and a QoS 1 PUBACK means the records are ' +
        'committed. `external`: an existing broker this service subscribes to (`FLEET_MQTT_URL`); log in as that broker says, ' +
        'and its PUBACK is the broker\'s, not a sign that the service has stored the records.',
    }),
  },
  { additionalProperties: false },
);

const DeviceEndpoints = named('DeviceEndpoints', Type.Object(
  {
    mqtt: Type.Union([MqttEndpoint, Type.Null()], { description: 'Null while MQTT ingestion has no listener: turned off, or its port could not be bound.' }),
    osmand: Type.Union([
      Type.Object(
        { url: Type.String({ description: 'The root of the OsmAnd port.', examples: ['http://fleet.example.com:5055/'] }) },
        { additionalProperties: false },
      ),
      Type.Null(),
    ], {
      description:
        'Null while the OsmAnd port is off or could not bind its port; `/osmand` of the API\'s own address serves OsmAnd either way.',
    }),
    teltonika: Type.Union([
      Type.Object(
        {
          host: Type.String({ description: 'A host name or an address (an IPv6 one without brackets).', examples: ['fleet.example.com'] }),
          port: Type.Integer({ minimum: 1, maximum: 65535, examples: [5027] }),
        },
        { additionalProperties: false },
      ),
      Type.Null(),
    ], { description: 'Null while the Teltonika listener is off or could not bind its port.' }),
  },
  {
    additionalProperties: false,
    examples: [{
      mqtt: { url: 'mqtt://fleet.example.com:1883', broker: 'embedded' },
      osmand: { url: 'http://fleet.example.com:5055/' },
      teltonika: { host: 'fleet.example.com', port: 5027 },
    }],
  },
), 'Where devices reach this process: each device entry point as it listens now.');

/** The host to name: the listener's own, unless it listens on every address. Without brackets. */
function hostOf(bound: string, publicHost: string): string {
  const host = WILDCARDS.has(bound) ? publicHost : bound;
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** `host:port` for a URL: an IPv6 address in brackets. */
function authority(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

export async function deviceEndpointRoutes(app: FastifyInstance, opts: {
  publicUrl: string;
  mqtt: MqttConfig;
  listeners: { mqtt: Listening; osmand?: Listening | undefined; teltonika?: Listening | undefined };
}) {
  const { mqtt, listeners } = opts;
  const publicHost = new URL(opts.publicUrl).hostname;

  app.get('/v2/device-endpoints', {
    config: { scope: 'telemetry:write' },
    schema: {
      operationId: 'getDeviceEndpoints', tags: ['devices'], summary: 'Where devices send',
      description:
        'The MQTT, OsmAnd and Teltonika listeners of the process that answers, on the ports it has bound: null for one that is off ' +
        'or could not bind its port (`/osmand` of the API serves OsmAnd whatever its port). A listener on every address is named by ' +
        'the host of the public URL (`FLEET_PUBLIC_URL`), one on a given address by that address. With an existing broker ' +
        '(`FLEET_MQTT_URL`), `mqtt` is that broker.',
      response: responses({ 200: DeviceEndpoints }),
    },
  }, async () => {
    const mqttAt = listeners.mqtt.address?.();
    const osmandAt = listeners.osmand?.address?.();
    const teltonikaAt = listeners.teltonika?.address?.();
    return {
      mqtt: mqtt.mode === 'broker'
        ? { url: mqtt.url, broker: 'external' as const }
        : mqttAt === undefined ? null : { url: `mqtt://${authority(hostOf(mqttAt.host, publicHost), mqttAt.port)}`, broker: 'embedded' as const },
      osmand: osmandAt === undefined ? null : { url: `http://${authority(hostOf(osmandAt.host, publicHost), osmandAt.port)}/` },
      teltonika: teltonikaAt === undefined ? null : { host: hostOf(teltonikaAt.host, publicHost), port: teltonikaAt.port },
    };
  });
}
