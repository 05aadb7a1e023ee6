// The embedded MQTT listener (aedes): devices connect to the service itself and log in with an API
// key of scope `telemetry:write` as the password; the key's organization owns the vehicles.
//
// What a device sees (MQTT 3.1.1 has no negative PUBACK; an error from authorizePublish closes the
// connection, and that is the only "no" the protocol can say):
// - stored: PUBACK (QoS 1), sent only after the commit.
// - invalid payload: PUBACK all the same, and the message is dropped and counted. It can never be
//   stored, and a device whose client retries unacknowledged messages would otherwise resend the
//   poison message after every reconnect, forever, stuck behind it.
// - refused (not its vehicle, unknown or retired vehicle, bad topic, credential revoked since
//   CONNECT) and error (the store could not commit): no PUBACK, the connection is closed. The
//   device's client reconnects and resends, so nothing it sent is lost: a refused message goes
//   through once the vehicle is registered, a failed one once the store is back.
import net from 'node:net';
import { Aedes, type AuthenticateError, type Client, type PublishPacket, type Subscription } from 'aedes';
import type { FastifyBaseLogger } from 'fastify';
import type { AuthService } from '../auth/service.ts';
import type { Principal } from '../auth/scopes.ts';
import { isAppError } from '../errors.ts';
import { createProtocolListener } from '../protocols/listener.ts';
import { PacketTooLarge, limitPacketSize } from './mqtt-packet-limit.ts';
import type { MqttIngest, MqttIngestion } from './mqtt.ts';
import { type MqttCommands, resultTopic, vehicleOfCommandsTopic } from './mqtt-commands.ts';

/** CONNACK return codes of MQTT 3.1.1 (aedes declares them as a const enum, which TS cannot import here). */
const SERVER_UNAVAILABLE = 3;
const BAD_USERNAME_OR_PASSWORD = 4;
const NOT_AUTHORIZED = 5;

interface Device {
  /** The password given at CONNECT, checked again at each publish: a revoked key stops at once. */
  secret: string;
  credentialId: string;
  organizationId: string;
  /** Settles once this device's previous publish has been answered: PUBACKs keep the PUBLISH order. */
  turn: Promise<void>;
}

/** The id the broker keeps a device's session under: its organization's, then the one it chose. */
export function scopedClientId(organizationId: string, clientId: string): string {
  return `${organizationId}/${clientId}`;
}

function refusal(returnCode: number, message: string): AuthenticateError {
  return Object.assign(new Error(message), { returnCode });
}

export function createMqttListener(deps: {
  host: string;
  port: number;
  auth: Pick<AuthService, 'authenticate'>;
  ingest: MqttIngest;
  /** Commands to devices over their connections; none: devices only publish telemetry. */
  commands?: MqttCommands<Client>;
  log: FastifyBaseLogger;
}): MqttIngestion {
  const { host, port, auth, ingest, commands, log } = deps;
  const devices = new WeakMap<Client, Device>();
  const sockets = new Set<net.Socket>();
  const answering = new Set<Promise<void>>();
  let broker: Aedes | undefined;
  let server: net.Server | undefined;
  let closing = false;

  async function principalOf(secret: string): Promise<Principal | number> {
    try {
      const principal = await auth.authenticate(secret);
      return principal.scopes.has('telemetry:write') ? principal : NOT_AUTHORIZED;
    } catch (error) {
      if (isAppError(error) && error.code === 'invalid-token') return BAD_USERNAME_OR_PASSWORD;
      log.error({ err: error }, 'MQTT login could not be checked');
      return SERVER_UNAVAILABLE;
    }
  }

  async function login(client: Client, password: Buffer | undefined): Promise<AuthenticateError | null> {
    const secret = password?.toString('utf8') ?? '';
    const found = secret === '' ? BAD_USERNAME_OR_PASSWORD : await principalOf(secret);
    if (typeof found === 'number') {
      log.info({ clientId: client.id, returnCode: found }, 'MQTT login refused');
      return refusal(found, found === NOT_AUTHORIZED ? 'the key lacks telemetry:write' : 'bad user name or password');
    }
    // MQTT lets a new connection with a connected client's id take its session over (the old one
    // is closed). Ids are chosen by devices, so one organization could disconnect another's
    // devices by reusing their ids: the broker knows each device by its organization's id and
    // the id it chose, and a takeover happens only within an organization. aedes registers the
    // client (and takes a session over) after this hook, under `client.id`.
    client.id = scopedClientId(found.organizationId, client.id);
    devices.set(client, { secret, credentialId: found.credentialId, organizationId: found.organizationId, turn: Promise.resolve() });
    log.debug({ clientId: client.id, credentialId: found.credentialId }, 'MQTT device connected');
    return null;
  }

  /** Resolves to null to acknowledge, or to the error that closes the connection unacknowledged. */
  async function answer(device: Device, client: Client, packet: PublishPacket): Promise<Error | null> {
    const context = { clientId: client.id, credentialId: device.credentialId, topic: packet.topic };
    if (closing) return new Error('shutting down: not acknowledged, to be resent');
    const principal = await principalOf(device.secret);
    if (typeof principal === 'number') {
      const result = principal === SERVER_UNAVAILABLE
        ? { outcome: 'error' as const, detail: 'the credential could not be checked' }
        : { outcome: 'refused' as const, detail: 'the credential is no longer valid for telemetry:write' };
      ingest.settle(result, context);
      return new Error(result.detail);
    }
    if (commands !== undefined && resultTopic(packet.topic) !== undefined) {
      const taken = await commands.result(principal, packet.topic, packet.payload);
      return taken === 'taken' ? null : new Error('the credential may not answer for this vehicle');
    }
    const { outcome, detail } = await ingest.ingest(principal.organizationId, packet.topic, packet.payload, context, principal);
    return outcome === 'stored' || outcome === 'invalid' ? null : new Error(detail ?? outcome);
  }

  const options = {
    authenticate(client: Client, _username: Readonly<string | undefined>, password: Readonly<Buffer | undefined>,
      done: (error: AuthenticateError | null, success: boolean | null) => void) {
      void login(client, password).then((error) => done(error, error === null));
    },

    // aedes writes the PUBACK right after authorizePublish calls back, before its `published`
    // hook runs: so the records are committed here, and the callback waits for the commit. A
    // failure calls back with an error, which closes the connection without a PUBACK.
    authorizePublish(client: Client | null, packet: PublishPacket, callback: (error?: Error | null) => void) {
      const device = client === null ? undefined : devices.get(client);
      if (client === null || device === undefined) {
        callback(new Error('only logged-in devices publish'));
        return;
      }
      // Nothing is kept for later subscribers: retained messages would pile up in memory.
      packet.retain = false;
      const answered = answer(device, client, packet).catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))));
      const turn = device.turn
        .then(() => answered)
        .then((error) => callback(error))
        .catch((error: unknown) => log.error({ err: error }, 'MQTT publish callback failed'));
      device.turn = turn;
      answering.add(turn);
      void turn.finally(() => answering.delete(turn));
    },

    // A device may subscribe to its vehicles' commands topics alone, by exact name, at QoS 1 or 2
    // (a command is sent at its PUBACK); any other subscription is refused (SUBACK 0x80) and the
    // connection stays.
    authorizeSubscribe(client: Client, subscription: Subscription, callback: (error: Error | null, subscription: Subscription | null) => void) {
      const device = devices.get(client);
      if (commands === undefined || device === undefined || subscription.qos === 0 || vehicleOfCommandsTopic(subscription.topic) === undefined) {
        callback(null, null);
        return;
      }
      void principalOf(device.secret)
        .then(async (principal) => (typeof principal === 'number' ? false : commands.maySubscribe(principal, subscription.topic)))
        .then((allowed) => callback(null, allowed ? { ...subscription, qos: 1 } : null))
        .catch((error: unknown) => {
          log.error({ err: error }, 'MQTT subscription could not be checked');
          callback(null, null);
        });
    },
  };

  /** Listens with a new broker; holds nothing open when it cannot (protocols/listener.ts). */
  async function listen(): Promise<number> {
    const aedes = await Aedes.createBroker({ ...options, connectTimeout: 10_000 });
    const closedOnError = (clientId: string | null, error: Error) => {
      if (error instanceof PacketTooLarge) log.info({ clientId, err: error }, 'MQTT connection closed: packet too large');
      else log.debug({ clientId, err: error }, 'MQTT connection closed on error');
    };
    aedes.on('clientError', (client, error) => closedOnError(client.id, error));
    aedes.on('connectionError', (_client, error) => closedOnError(null, error));
    if (commands !== undefined) {
      aedes.on('subscribe', (subscriptions, client) => {
        const organizationId = devices.get(client)?.organizationId;
        if (organizationId === undefined) return;
        for (const s of subscriptions) if ((s.qos as number) !== 128) commands.subscribed(client, organizationId, s.topic);
      });
      aedes.on('unsubscribe', (topics, client) => {
        for (const topic of topics) commands.unsubscribed(client, topic);
      });
      aedes.on('clientDisconnect', (client) => commands.disconnected(client));
      // A resumed session's subscriptions are restored without a 'subscribe' event.
      aedes.on('clientReady', (client) => {
        const organizationId = devices.get(client)?.organizationId;
        if (organizationId === undefined) return;
        for (const topic of Object.keys((client as Client & { subscriptions?: Record<string, unknown> }).subscriptions ?? {})) commands.subscribed(client, organizationId, topic);
      });
      aedes.on('ack', (packet, client) => {
        const organizationId = devices.get(client)?.organizationId;
        if (organizationId === undefined) return;
        if (packet === undefined) void commands.acknowledged(client, organizationId, undefined);
        else if ('topic' in packet && vehicleOfCommandsTopic(packet.topic) !== undefined) void commands.acknowledged(client, organizationId, packet.payload);
      });
    }
    // noDelay: a PUBACK is a few bytes that a device waits for; Nagle's algorithm would hold it
    // back until the device's TCP acknowledgement (up to 40 ms with delayed ACKs).
    const tcp = net.createServer({ noDelay: true }, (socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      aedes.handle(limitPacketSize(socket));
    });
    try {
      await new Promise<void>((resolve, reject) => {
        tcp.once('error', reject);
        tcp.listen(port, host, () => {
          tcp.off('error', reject);
          resolve();
        });
      });
    } catch (error) {
      await new Promise<void>((resolve) => aedes.close(() => resolve()));
      throw error;
    }
    tcp.on('error', (error) => log.error({ err: error }, 'MQTT listener error'));
    broker = aedes;
    server = tcp;
    const address = tcp.address();
    return typeof address === 'object' && address !== null ? address.port : port;
  }

  /**
   * Graceful: stop accepting, answer every publish already received (its commit and PUBACK; any
   * arriving now is left unacknowledged, to be resent), then close every connection.
   */
  async function close() {
    closing = true;
    if (broker === undefined || server === undefined) return;
    const tcp = server;
    const closed = new Promise<void>((resolve) => tcp.close(() => resolve()));
    while (answering.size > 0) await Promise.allSettled([...answering]);
    await new Promise<void>((resolve) => broker!.close(() => resolve()));
    // Connections that never logged in are not aedes clients: close them too.
    for (const socket of sockets) socket.destroy();
    await closed;
    log.info('MQTT listener closed');
  }

  return createProtocolListener({ name: 'MQTT', ingestion: 'MQTT', host, port, log, listen, close });
}
