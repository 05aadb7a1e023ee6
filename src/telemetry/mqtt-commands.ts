// Commands over MQTT (docs/API.md "Commands"): a device subscribes to `fleet/{vehicleId}/commands`
// (QoS 1) and answers on `fleet/{vehicleId}/commands/{commandId}/result`. The embedded listener
// publishes each command to each subscribed connection itself (never through the broker's
// routing, which knows no organizations), at most once per connection; the command is `sent` at
// the device's PUBACK, and times out like any sent command when no result comes.
//
// What comes on a result topic is judged here: a result the device may not give (not its
// vehicle) closes the connection, as any refused publish does; anything else that cannot complete
// the command it names (bad JSON, wrong shape, an unknown command, one of another vehicle, one not
// sent) is acknowledged, logged and dropped: it completes nothing, and the connection goes on.
import type { FastifyBaseLogger } from 'fastify';
import type { Principal } from '../auth/scopes.ts';
import type { CommandChannel, CommandLink, CommandOutcome } from '../commands/channel.ts';
import type { CommandRecord } from '../commands/model.ts';
import { compileDataValidator } from '../schema/validation.ts';
import { VehicleId } from '../vehicles/schema.ts';
import { vehicleKey } from '../vehicles/key.ts';

const COMMANDS_TOPIC = /^fleet\/([^/+#]*)\/commands$/;
const RESULT_TOPIC = /^fleet\/([^/+#]*)\/commands\/(cmd_[A-Za-z0-9]{20})\/result$/;
const validVehicleId = compileDataValidator<string>(VehicleId);
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The vehicle a commands topic names, or undefined. */
export function vehicleOfCommandsTopic(topic: string): string | undefined {
  const id = COMMANDS_TOPIC.exec(topic)?.[1];
  return id !== undefined && validVehicleId(id) ? id : undefined;
}

/** The vehicle and command a result topic names, or undefined. */
export function resultTopic(topic: string): { vehicleId: string; commandId: string } | undefined {
  const match = RESULT_TOPIC.exec(topic);
  return match !== null && validVehicleId(match[1]) ? { vehicleId: match[1], commandId: match[2]! } : undefined;
}

/** The message a device receives on its commands topic. */
export function commandMessage(command: CommandRecord): string {
  return JSON.stringify({ id: command.id, type: command.type, params: command.params, expiresAt: new Date(command.expiresAt).toISOString() });
}

/** A device's result message as an outcome, or why it is not one. */
export function outcomeOf(payload: Buffer | string): CommandOutcome | { invalid: string } {
  let body: unknown;
  try {
    body = JSON.parse(typeof payload === 'string' ? payload : utf8.decode(payload));
  } catch {
    return { invalid: 'the payload is not UTF-8 JSON' };
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { invalid: 'the payload is not a JSON object' };
  const { status, result, error, ...rest } = body as Record<string, unknown>;
  if (Object.keys(rest).length > 0) return { invalid: `unknown member "${Object.keys(rest)[0]!.slice(0, 64)}"` };
  const text = (value: unknown) => value === undefined || value === null || (typeof value === 'string' && value.length <= 4096);
  if (!text(result) || !text(error)) return { invalid: '`result` and `error` must be strings of at most 4096 characters' };
  if (status === 'succeeded') return { status, result: (result as string | undefined) ?? null };
  if (status === 'failed') return { status, error: (error as string | undefined) ?? 'the device reported a failure', result: (result as string | undefined) ?? null };
  return { invalid: '`status` must be "succeeded" or "failed"' };
}

export function createMqttCommands<C extends object>(deps: {
  link: CommandLink;
  /** Whether the credential may use the vehicle's topics: its organization's, and one it sees. */
  mayUse: (who: Principal, vehicleId: string) => Promise<boolean>;
  /** Publishes to one connection at QoS 1. */
  publishTo: (client: C, topic: string, payload: string) => void;
  log: FastifyBaseLogger;
}) {
  const { link, log } = deps;
  /** Subscribed connections by organization and vehicle. */
  const subscribers = new Map<string, Set<C>>();
  /** Per connection: its organization, the vehicles it subscribed to, the commands published to it (each once), awaiting PUBACK. */
  const connections = new Map<C, { organizationId: string; vehicles: Set<string>; published: Map<string, CommandRecord> }>();
  const results = createResultWaits(link, log);

  function publish(client: C, command: CommandRecord) {
    const state = connections.get(client);
    if (state === undefined || state.published.has(command.id)) return;
    state.published.set(command.id, command);
    deps.publishTo(client, `fleet/${command.vehicleId}/commands`, commandMessage(command));
  }

  async function sendQueued(client: C, organizationId: string, vehicleId: string) {
    try {
      for (const command of await link.queued(organizationId, vehicleId, 'mqtt')) publish(client, command);
    } catch (error) {
      log.warn({ err: error, vehicleId }, 'MQTT commands not published; they go out at the next subscription or command');
    }
  }

  function unsubscribed(client: C, topic: string) {
    const vehicleId = vehicleOfCommandsTopic(topic);
    const state = connections.get(client);
    if (vehicleId === undefined || state === undefined) return;
    state.vehicles.delete(vehicleId);
    const key = vehicleKey(state.organizationId, vehicleId);
    const set = subscribers.get(key);
    if (set?.delete(client) !== true || set.size > 0) return;
    subscribers.delete(key);
    link.present(state.organizationId, vehicleId, 'mqtt', false);
  }

  const channel: CommandChannel = {
    name: 'mqtt',
    connected: (organizationId, vehicleId) => (subscribers.get(vehicleKey(organizationId, vehicleId))?.size ?? 0) > 0,
    offer(command) {
      for (const client of subscribers.get(vehicleKey(command.organizationId, command.vehicleId)) ?? []) publish(client, command);
    },
  };

  return {
    channel,

    /** May `who` subscribe to `topic`? Only its vehicles' commands topics, by exact name (no wildcards). */
    async maySubscribe(who: Principal, topic: string): Promise<boolean> {
      const vehicleId = vehicleOfCommandsTopic(topic);
      return vehicleId !== undefined && (await deps.mayUse(who, vehicleId));
    },

    subscribed(client: C, organizationId: string, topic: string) {
      const vehicleId = vehicleOfCommandsTopic(topic);
      if (vehicleId === undefined) return;
      let state = connections.get(client);
      if (state === undefined) connections.set(client, (state = { organizationId, vehicles: new Set(), published: new Map() }));
      state.vehicles.add(vehicleId);
      const key = vehicleKey(organizationId, vehicleId);
      let set = subscribers.get(key);
      if (set === undefined) {
        subscribers.set(key, (set = new Set()));
        link.present(organizationId, vehicleId, 'mqtt', true);
      }
      set.add(client);
      // Commands queued while nobody listened go out now.
      void sendQueued(client, organizationId, vehicleId);
    },

    unsubscribed,

    disconnected(client: C) {
      const state = connections.get(client);
      if (state === undefined) return;
      for (const vehicleId of [...state.vehicles]) unsubscribed(client, `fleet/${vehicleId}/commands`);
      connections.delete(client);
    },

    /**
     * The device acknowledged a command (PUBACK): it is sent now, and waits for its result. A
     * clean session's PUBACK comes without the message it answers (the broker keeps none), but a
     * device answers its QoS 1 messages in the order they came (MQTT 3.1.1 §4.6), and only
     * commands are published to it: the oldest unacknowledged one is the one. A resumed session's
     * PUBACK carries the message (perhaps one published on an earlier connection): its id says.
     */
    async acknowledged(client: C, organizationId: string, payload: Buffer | string | undefined) {
      const state = connections.get(client);
      let command: CommandRecord | undefined;
      if (payload === undefined) {
        const oldest = state?.published.keys().next();
        command = oldest === undefined || oldest.done === true ? undefined : state!.published.get(oldest.value);
      } else {
        let id: unknown;
        try {
          id = (JSON.parse(payload.toString()) as { id?: unknown }).id;
        } catch {
          return;
        }
        if (typeof id !== 'string') return;
        command = state?.published.get(id) ?? (await link.get(organizationId, id).catch(() => undefined));
      }
      if (command === undefined) return;
      state?.published.delete(command.id);
      try {
        const sent = await link.take(command);
        if (sent !== undefined) results.wait(sent);
      } catch (error) {
        log.warn({ err: error, commandId: command.id }, 'MQTT command acknowledged but not recorded as sent; the sweep settles it');
      }
    },

    /**
     * A publish on a result topic: `refused` when the credential may not answer for the vehicle
     * (the connection closes), else `taken` (acknowledged, whatever became of it).
     */
    async result(who: Principal, topic: string, payload: Buffer | string): Promise<'taken' | 'refused'> {
      const named = resultTopic(topic);
      if (named === undefined || !(await deps.mayUse(who, named.vehicleId))) return 'refused';
      await results.settle(who.organizationId, named, payload);
      return 'taken';
    },
  };
}

export type MqttCommands<C extends object> = ReturnType<typeof createMqttCommands<C>>;

/**
 * Sent commands waiting for their result on this node, each with its timeout; and a result as it
 * comes, judged: completing its command only when it is one of that vehicle's, sent over MQTT and
 * still waiting; logged and dropped otherwise.
 */
export function createResultWaits(link: CommandLink, log: FastifyBaseLogger) {
  const waiting = new Map<string, { cancel(): void }>();
  return {
    wait(sent: CommandRecord) {
      if (waiting.has(sent.id)) return;
      waiting.set(sent.id, link.after(link.timeoutMs, () => {
        waiting.delete(sent.id);
        void link.settle(sent.organizationId, sent.id, { status: 'timed_out', error: `no result from the device within ${Math.round(link.timeoutMs / 1000)} s` })
          .catch((error: unknown) => log.warn({ err: error, commandId: sent.id }, 'command timeout not recorded; the sweep records it'));
      }));
    },
    async settle(organizationId: string, named: { vehicleId: string; commandId: string }, payload: Buffer | string): Promise<void> {
      const outcome = outcomeOf(payload);
      if ('invalid' in outcome) {
        log.info({ ...named, detail: outcome.invalid }, 'MQTT command result dropped');
        return;
      }
      const settled = await link.settle(organizationId, named.commandId, outcome, { vehicleId: named.vehicleId, channel: 'mqtt' });
      if (!settled) {
        log.info(named, 'MQTT command result dropped: no such command of this vehicle waiting for its result');
        return;
      }
      waiting.get(named.commandId)?.cancel();
      waiting.delete(named.commandId);
    },
  };
}
