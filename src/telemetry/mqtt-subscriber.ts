// Ingestion from an existing broker (Mosquitto, EMQX, HiveMQ): instead of its own listener the
// service connects as a client and takes the shared subscription
// `$share/<group>/fleet/+/telemetry`, so the nodes of one deployment split the messages between
// them. Devices authenticate to the broker; the broker's topics all belong to one configured
// organization.
//
// Acknowledgements: each message is acknowledged to the broker only once it is stored (or judged
// never storable: invalid, or refused, e.g. an unknown vehicle; unacknowledged, those would fill
// the broker's in-flight window and stall the subscription). A message that could not be
// committed is left unacknowledged and the session is resumed shortly after, so the broker sends
// it again. MQTT 5 because mqtt.js lets the application decide the PUBACK (customHandleAcks) only
// there, and because a session expiry interval lets the broker keep this node's session across a
// reconnect or restart without keeping it forever once the node is gone.
//
// Several messages are in hand at once (as many as the broker sends before their PUBACKs, up to
// RECEIVE_MAXIMUM), so they share group commits as HTTP requests do. mqtt.js would send each
// PUBACK itself, and read the next message only after it: one commit per message. So its PUBACK
// is declined at once and sent here after the commit, in the order the messages came, as MQTT
// requires (§4.6), and only on the connection that brought the message.
//
// A broker may go on handing a shared subscription's messages to a member whose session it keeps
// while the member is away (Mosquitto does, in turn with the others): they wait there for the
// node's return, and are dropped when the session expires. A node that will not return under its
// id (FLEET_MQTT_SESSION=leave) therefore leaves the group at shutdown: it unsubscribes, stores
// what the broker still sends it, and ends its session.
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import { type IClientOptions, type MqttClient, connect } from 'mqtt';
import type { AuthService } from '../auth/service.ts';
import type { MqttConfig } from '../config.ts';
import type { CheckState } from '../readiness.ts';
import type { CommandLink } from '../commands/channel.ts';
import type { CommandRecord } from '../commands/model.ts';
import type { MqttIngest, MqttIngestion, MqttOutcome } from './mqtt.ts';
import { commandMessage, createResultWaits, resultTopic } from './mqtt-commands.ts';

/** How long the broker keeps this node's session (its subscription and unacknowledged messages) while it is away. */
const SESSION_EXPIRY_SECONDS = 24 * 60 * 60;
/** After a failed commit: how long to wait before resuming the session to have the broker resend. */
const REDELIVERY_DELAY_MS = 2_000;
/** PUBACK reason codes (MQTT 5) for what is acknowledged without being stored. */
const REASON: Record<Exclude<MqttOutcome, 'error'>, number> = { stored: 0, invalid: 0x99, refused: 0x87 };

/** Leaving: the node stops once no message has come for this long since it unsubscribed... */
const LEAVE_QUIET_MS = 500;
/** ...or after this long at the most (within the 10 s a shutdown may take), keeping its session if a message is still unanswered. */
const LEAVE_MAX_MS = 5_000;

/** Messages the broker may send before their PUBACKs (MQTT 5 Receive Maximum): what is in hand at most. */
const RECEIVE_MAXIMUM = 100;

/** Marks the callback error that withholds mqtt.js's PUBACK, so the client's error log skips it. */
class NotAcknowledged extends Error {}
// Made once: one per message would capture a stack trace per message for nothing.
const DECLINED = new NotAcknowledged('acknowledged once stored');
const CLOSING = new NotAcknowledged('shutting down: left for the broker to resend');

/** A message in hand: its PUBACK's reason code once known (null: not stored, no PUBACK). */
interface InHand {
  messageId: number;
  connection: number;
  code: number | null | undefined;
}

/** mqtt.js's own packet writer (private in its types): the PUBACKs this module sends itself. */
type PacketWriter = { _sendPacket(packet: { cmd: 'puback'; messageId: number; reasonCode: number }): void };

type BrokerConfig = Extract<MqttConfig, { mode: 'broker' }>;

export function createMqttSubscriber(deps: {
  config: BrokerConfig;
  auth: Pick<AuthService, 'getOrganization'>;
  ingest: MqttIngest;
  /** Commands to devices through the broker; none: telemetry only. */
  commands?: CommandLink;
  log: FastifyBaseLogger;
}): MqttIngestion {
  const { config, ingest, commands } = deps;
  const log = deps.log.child({ broker: config.url, clientId: config.clientId });
  const filter = `$share/${config.shareGroup}/fleet/+/telemetry`;
  // Devices' answers to commands, shared between the nodes like telemetry.
  const filters = commands === undefined ? [filter] : [filter, `$share/${config.shareGroup}/fleet/+/commands/+/result`];
  const results = commands === undefined ? undefined : createResultWaits(commands, log);
  const handling = new Set<Promise<void>>();
  let client: MqttClient | undefined;
  let state: CheckState = { degraded: 'connecting to the MQTT broker' };
  let closing = false;
  /** Leaving the share group at shutdown: messages are still stored, the subscription is not renewed. */
  let leaving = false;
  /** When the last message came (leaving waits for a quiet moment); whether one was left unstored since the session was resumed. */
  let lastMessageAt = 0;
  let unstored = false;
  let redelivery: NodeJS.Timeout | undefined;
  /** Counts connections, so that a PUBACK goes out only on the connection its message came on. */
  let connection = 0;
  /** Messages in hand in the order they came; their PUBACKs leave in that order. */
  const inHand: InHand[] = [];

  /** Sends the PUBACKs now due: those of the first messages in hand whose outcome is known. */
  function acknowledge() {
    for (let next = inHand[0]; next !== undefined && next.code !== undefined; next = inHand[0]) {
      inHand.shift();
      if (next.code === null || next.connection !== connection || client === undefined || !client.connected) continue;
      (client as unknown as PacketWriter)._sendPacket({ cmd: 'puback', messageId: next.messageId, reasonCode: next.code });
    }
  }

  function degrade(detail: string) {
    if (typeof state === 'object' && state.degraded === detail) return;
    state = { degraded: detail };
    if (!closing) log.warn(`MQTT broker: ${detail}`);
  }

  function track(work: Promise<void>) {
    handling.add(work);
    void work.finally(() => handling.delete(work));
  }

  /** Resuming the session has the broker resend what it holds unacknowledged for it. */
  function scheduleRedelivery() {
    if (redelivery !== undefined || closing) return;
    redelivery = setTimeout(() => {
      redelivery = undefined;
      if (closing || leaving || client === undefined) return;
      log.info('MQTT broker: reconnecting so the broker resends what was not stored');
      client.reconnect();
    }, REDELIVERY_DELAY_MS);
  }

  const options: IClientOptions = {
    protocolVersion: 5,
    clientId: config.clientId,
    clean: false,
    properties: { sessionExpiryInterval: SESSION_EXPIRY_SECONDS, receiveMaximum: RECEIVE_MAXIMUM },
    reconnectPeriod: 1_000,
    connectTimeout: 10_000,
    // Subscribed again on every connect below, where the SUBACK is checked.
    resubscribe: false,
    ...(config.username === undefined ? {} : { username: config.username }),
    ...(config.password === undefined ? {} : { password: config.password }),
    // QoS 1 (the subscription's): mqtt.js's PUBACK is declined at once, so it reads the next
    // message; this module sends the PUBACK after the commit (acknowledge()).
    customHandleAcks(topic, payload, packet: { messageId?: number }, done) {
      lastMessageAt = Date.now();
      done(closing ? CLOSING : DECLINED);
      if (closing) return;
      const message: InHand = { messageId: packet.messageId!, connection, code: undefined };
      inHand.push(message);
      const named = results === undefined ? undefined : resultTopic(topic);
      if (named !== undefined) {
        // A device's answer to a command: acknowledged once judged; a store failure has the broker send it again.
        track(results!.settle(config.organizationId, named, payload).then(
          () => void (message.code = 0),
          (error: unknown) => {
            log.warn({ err: error, ...named }, 'MQTT command result not recorded; the broker sends it again');
            unstored = true;
            scheduleRedelivery();
            message.code = null;
          },
        ).finally(acknowledge));
        return;
      }
      track(ingest.ingest(config.organizationId, topic, payload, { messageId: packet.messageId }).then(({ outcome }) => {
        if (outcome === 'error') {
          unstored = true;
          scheduleRedelivery();
          message.code = null;
        } else {
          message.code = REASON[outcome];
        }
        acknowledge();
      }));
    },
  };

  function subscribe(mqtt: MqttClient) {
    mqtt.subscribe(filters, { qos: 1 }, (error, granted) => {
      const refused = granted?.find((g) => g.qos >= 0x80);
      if (error !== null || refused !== undefined) {
        degrade(`the broker refused the subscription to ${refused?.topic ?? filters.join(', ')}${error === null ? '' : `: ${error.message}`}`);
        return;
      }
      if (state !== 'up') log.info({ filters }, `MQTT broker: subscribed to ${filters.join(', ')}`);
      state = 'up';
    });
  }

  /**
   * Publishes a queued command to the broker at QoS 1. It is taken (queued → sent) first, so that
   * of the nodes sharing the broker one alone publishes it; `sent` here means the broker has it to
   * hand to the device's session (docs/API.md "Commands").
   */
  async function publishCommand(command: CommandRecord) {
    const mqtt = client;
    if (commands === undefined || mqtt === undefined || !mqtt.connected || closing || command.organizationId !== config.organizationId) return;
    try {
      const sent = await commands.take(command);
      if (sent === undefined) return;
      results!.wait(sent);
      mqtt.publish(`fleet/${sent.vehicleId}/commands`, commandMessage(sent), { qos: 1 }, (error) => {
        if (error) log.warn({ err: error, commandId: sent.id }, 'MQTT broker: command not published; it times out unanswered');
      });
    } catch (error) {
      log.warn({ err: error, commandId: command.id }, 'MQTT broker: command not published; it goes out at the next connection');
    }
  }

  async function publishQueued() {
    if (commands === undefined) return;
    try {
      for (const command of await commands.queued(config.organizationId, undefined, 'mqtt')) await publishCommand(command);
    } catch (error) {
      log.warn({ err: error }, 'MQTT broker: queued commands not published; they go out at the next connection');
    }
  }

  async function start() {
    // A wrong organization id would have every message refused and dropped: refuse to start instead.
    try {
      await deps.auth.getOrganization(config.organizationId);
    } catch (error) {
      throw new Error(`FLEET_MQTT_ORGANIZATION: "${config.organizationId}" is not an organization of this store`, { cause: error });
    }
    const mqtt = connect(config.url, options);
    client = mqtt;
    if (typeof (mqtt as unknown as Partial<PacketWriter>)._sendPacket !== 'function') {
      mqtt.end(true);
      throw new Error('this version of mqtt.js has no _sendPacket: broker messages could not be acknowledged');
    }
    // A refused CONNECT (bad credentials, not authorized) is the better detail until a connect succeeds.
    let refusal: string | undefined;
    mqtt.on('connect', () => {
      refusal = undefined;
      connection++;
      // A resumed session has the broker send again what was left unstored.
      unstored = false;
      if (!leaving) subscribe(mqtt);
      void publishQueued();
    });
    mqtt.on('close', () => degrade(refusal ?? 'not connected to the MQTT broker; reconnecting'));
    mqtt.on('error', (error) => {
      if (error instanceof NotAcknowledged) return;
      if ('code' in error && typeof error.code === 'number') {
        refusal = `the broker refused the connection: ${error.message}`;
        degrade(refusal);
      } else {
        log.debug({ err: error }, 'MQTT broker: client error');
      }
    });
    // QoS 0 messages carry no acknowledgement: ingested as they come, and counted like the rest.
    mqtt.on('message', (topic, payload, packet) => {
      if (packet.qos === 0 && !closing) track(ingest.ingest(config.organizationId, topic, payload).then(() => undefined));
    });
    log.info({ filter }, `MQTT broker: connecting to ${config.url}`);
  }

  /**
   * Leaves the share group: unsubscribes, then stores what the broker still sends until none has
   * come for a moment. Whether the session may end: every message sent was stored or answered.
   */
  async function leave(mqtt: MqttClient): Promise<boolean> {
    leaving = true;
    clearTimeout(redelivery);
    const deadline = Date.now() + LEAVE_MAX_MS;
    let unsubscribed: boolean | undefined; // known once the broker answers
    mqtt.unsubscribe(filters, (error) => {
      if (error) log.warn({ err: error }, 'MQTT broker: the broker did not confirm leaving the share group');
      unsubscribed = !error;
      lastMessageAt = Date.now();
    });
    const settled = () => unsubscribed === true && handling.size === 0 && Date.now() - lastMessageAt >= LEAVE_QUIET_MS;
    while (!settled() && unsubscribed !== false && Date.now() < deadline && mqtt.connected) await sleep(50);
    if (unstored || !settled() || !mqtt.connected) {
      log.warn('MQTT broker: a message may still be unanswered; the session is kept for the broker to send it again');
      return false;
    }
    return true;
  }

  /**
   * Finish the messages in hand, then disconnect. The session stays with the broker for the next
   * start, unless the node leaves the share group (FLEET_MQTT_SESSION=leave).
   */
  async function stop() {
    const mqtt = client;
    const end = mqtt !== undefined && config.session === 'leave' && mqtt.connected && (await leave(mqtt));
    closing = true;
    clearTimeout(redelivery);
    if (mqtt === undefined) return;
    while (handling.size > 0) await Promise.allSettled([...handling]);
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => mqtt.end(true, () => resolve()), 5_000);
      // A session expiry of 0 in the DISCONNECT ends the session with the connection.
      mqtt.end(!mqtt.connected, end ? { properties: { sessionExpiryInterval: 0 } } : {}, () => {
        clearTimeout(force);
        resolve();
      });
    });
    state = { degraded: 'shut down' };
    log.info(end ? 'MQTT broker: left the share group and ended the session' : 'MQTT broker: disconnected');
  }

  return {
    start, stop, readiness: async () => state,
    ...(commands === undefined ? {} : {
      channel: {
        name: 'mqtt' as const,
        // Whether the device is there is the broker's to know: connected to the broker is as near as this node can tell.
        connected: (organizationId: string) => organizationId === config.organizationId && client?.connected === true,
        offer: (command: CommandRecord) => void publishCommand(command),
      },
    }),
  };
}
