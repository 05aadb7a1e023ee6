// MQTT ingestion (docs/API.md "MQTT"), the part both transports share: the embedded listener
// (mqtt-listener.ts) and the subscription to an existing broker (mqtt-subscriber.ts). A message on
// `fleet/{vehicleId}/telemetry` goes through the one ingest function HTTP uses, so it is validated
// and committed exactly as a `POST /v2/telemetry/{vehicleId}` would be.
import type { FastifyBaseLogger } from 'fastify';
import type { Registry } from 'prom-client';
import { counterIn } from '../metric.ts';
import type { Principal } from '../auth/scopes.ts';
import type { AuthService } from '../auth/service.ts';
import type { MqttConfig } from '../config.ts';
import { isAppError } from '../errors.ts';
import type { CheckState } from '../readiness.ts';
import { compileDataValidator } from '../schema/validation.ts';
import { VehicleId } from '../vehicles/schema.ts';
import type { Client } from 'aedes';
import type { CommandChannel, CommandLink } from '../commands/channel.ts';
import { createMqttCommands } from './mqtt-commands.ts';
import { createMqttListener } from './mqtt-listener.ts';
import { createMqttSubscriber } from './mqtt-subscriber.ts';
import type { TelemetryService } from './service.ts';

/**
 * What became of a message. `stored`: committed (duplicates included). `invalid`: the payload is
 * not telemetry (bad JSON, fails validation): it can never be stored, retrying cannot help.
 * `refused`: the sender may not write there (topic, unknown or another organization's vehicle,
 * retired vehicle, credential no longer valid). `error`: our side failed (the store): worth a retry.
 */
export type MqttOutcome = 'stored' | 'invalid' | 'refused' | 'error';

export interface MqttResult {
  outcome: MqttOutcome;
  vehicleId?: string;
  detail?: string;
  /** The failure behind an `error`, for the log. */
  cause?: unknown;
}

const TOPIC = /^fleet\/([^/]*)\/telemetry$/;
const validVehicleId = compileDataValidator<string>(VehicleId);
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The vehicle id of a telemetry topic, or undefined when the topic is not one. */
export function vehicleOfTopic(topic: string): string | undefined {
  const id = TOPIC.exec(topic)?.[1];
  return id !== undefined && validVehicleId(id) ? id : undefined;
}

export type MqttIngest = ReturnType<typeof createMqttIngest>;

export function createMqttIngest(deps: {
  telemetry: Pick<TelemetryService, 'ingestForVehicle'>;
  registry: Registry;
  log: FastifyBaseLogger;
}) {
  const { telemetry, log } = deps;
  const messages = counterIn(deps.registry, {
    name: 'fleet_mqtt_messages_total',
    help: 'MQTT telemetry messages by outcome: stored, invalid (dropped), refused (not authorized), error (not stored, retried).',
    labelNames: ['outcome'],
  });
  for (const outcome of ['stored', 'invalid', 'refused', 'error'] as const) messages.inc({ outcome }, 0);

  /** Counts the outcome and logs what is not stored; every message is counted exactly once. */
  function settle(result: MqttResult, context: Record<string, unknown>): MqttResult {
    messages.inc({ outcome: result.outcome });
    if (result.outcome === 'error') log.error({ ...context, vehicleId: result.vehicleId, err: result.cause }, 'MQTT message not stored');
    else if (result.outcome !== 'stored') {
      log.info({ ...context, vehicleId: result.vehicleId, outcome: result.outcome, detail: result.detail }, 'MQTT message dropped');
    }
    return result;
  }

  /** Ingests one message for `organizationId`; never throws: the outcome says what happened. */
  /** `who`: the device's credential, when it is one of the organization's (a key limited to groups sends only for their vehicles). */
  async function ingest(organizationId: string, topic: string, payload: Buffer | string, context: Record<string, unknown> = {}, who?: Principal) {
    const vehicleId = vehicleOfTopic(topic);
    if (vehicleId === undefined) {
      return settle({ outcome: 'refused', detail: `topic "${topic.slice(0, 200)}" is not fleet/{vehicleId}/telemetry` }, context);
    }
    let body: unknown;
    try {
      body = JSON.parse(typeof payload === 'string' ? payload : utf8.decode(payload));
    } catch {
      return settle({ outcome: 'invalid', vehicleId, detail: 'the payload is not UTF-8 JSON' }, context);
    }
    try {
      await telemetry.ingestForVehicle(organizationId, vehicleId, body, 'mqtt', who);
      return settle({ outcome: 'stored', vehicleId }, context);
    } catch (error) {
      return settle(classify(error, vehicleId), context);
    }
  }

  return { ingest, settle };
}

function classify(error: unknown, vehicleId: string): MqttResult {
  if (!isAppError(error)) return { outcome: 'error', vehicleId, detail: 'the record could not be committed', cause: error };
  if (error.code === 'validation-failed') return { outcome: 'invalid', vehicleId, detail: error.message };
  if (error.code === 'vehicle-not-found' || error.code === 'vehicle-retired') return { outcome: 'refused', vehicleId, detail: error.message };
  return { outcome: 'error', vehicleId, detail: error.message, cause: error };
}

/** The MQTT side of the service as the app sees it (app/lifecycle.ts): started when the app is ready, stopped on close. */
export interface MqttIngestion {
  start(): Promise<void>;
  stop(): Promise<void>;
  readiness(): Promise<CheckState>;
  /** The embedded listener's host and the port it listens on, while it does (GET /v2/device-endpoints). */
  address?(): { host: string; port: number } | undefined;
  /** How commands reach devices over MQTT, when they can. */
  channel?: CommandChannel;
}

export function createMqttIngestion(deps: {
  config: MqttConfig;
  telemetry: Pick<TelemetryService, 'ingestForVehicle'>;
  auth: Pick<AuthService, 'authenticate' | 'getOrganization'>;
  registry: Registry;
  /** Commands to devices, and whether a device's credential may use a vehicle's command topics. */
  commands?: { link: CommandLink; mayUse: (who: Principal, vehicleId: string) => Promise<boolean> };
  log: FastifyBaseLogger;
}): MqttIngestion {
  const { config } = deps;
  const log = deps.log.child({ component: 'mqtt' });
  const ingest = createMqttIngest({ telemetry: deps.telemetry, registry: deps.registry, log });
  switch (config.mode) {
    case 'off':
      return { start: async () => undefined, stop: async () => undefined, readiness: async () => 'disabled' };
    case 'listener': {
      const commands = deps.commands === undefined ? undefined : createMqttCommands<Client>({
        link: deps.commands.link, mayUse: deps.commands.mayUse, log,
        publishTo: (client, topic, payload) => client.publish({ cmd: 'publish', topic, payload: Buffer.from(payload), qos: 1, retain: false, dup: false }, (error) => {
          if (error) log.debug({ err: error, clientId: client.id }, 'MQTT command not written; it goes out again at the next subscription');
        }),
      });
      const listener = createMqttListener({ host: config.host, port: config.port, auth: deps.auth, ingest, log, ...(commands === undefined ? {} : { commands }) });
      return commands === undefined ? listener : { ...listener, channel: commands.channel };
    }
    case 'broker':
      return createMqttSubscriber({ config, auth: deps.auth, ingest, log, ...(deps.commands === undefined ? {} : { commands: deps.commands.link }) });
  }
}
