// Device commands (docs/API.md "Commands"): created queued, handed to the vehicle's channel, moved
// through their lifecycle by the channels' answers, the clock (expiry, timeouts) and cancellation.
// Every change of status is written with its `command.<status>` event in one transaction and only
// from a status it may leave that way, so a command is sent at most once and never after its expiry.
import { noteNewId } from '../audit/context.ts';
import { actorTypeOf } from '../audit/entry.ts';
import type { Principal } from '../auth/scopes.ts';
import { type Clock, type Timer, iso } from '../clock.ts';
import type { DeviceStore } from '../devices/store.ts';
import { AppError, invalidBody } from '../errors.ts';
import type { EventPort } from '../events/port.ts';
import { type EventRecord, newEvent } from '../events/types.ts';
import type { VehicleScope } from '../groups/scope.ts';
import { vehicleNotFound } from '../groups/scope.ts';
import { newTimeOrderedId } from '../ids.ts';
import type { VehicleStore } from '../vehicles/store.ts';
import type { CommandChannel, CommandLink, CommandOutcome } from './channel.ts';
import {
  CHANNEL_TYPES, type ChannelName, type CommandChange, type CommandParams, type CommandRecord, type CommandStatus, MAX_UNFINISHED,
  expiryBounds, fromFor,
} from './model.ts';
import { COMMAND_LIST_LIMIT_DEFAULT, type CommandBody, type CommandListQuery } from './schema.ts';
import { type DevicePresence, presenceKey } from './presence.ts';
import type { CommandStore } from './store.ts';

export type CommandService = ReturnType<typeof createCommandService>;
export type CommandView = ReturnType<typeof toCommandView>;

export function toCommandView(c: CommandRecord) {
  return {
    id: c.id, vehicleId: c.vehicleId, type: c.type, params: c.params, channel: c.channel, status: c.status,
    createdAt: iso(c.createdAt), createdBy: c.createdBy, expiresAt: iso(c.expiresAt),
    sentAt: c.sentAt === null ? null : iso(c.sentAt), completedAt: c.completedAt === null ? null : iso(c.completedAt),
    result: c.result, error: c.error,
  };
}

/** How often queued commands are checked for expiry, and sent ones whose node went away for their timeout. */
const SWEEP_MS = 1_000;
/** A sent command's own connection times it out; the sweep takes those of a node that is gone, this much later. */
const ORPHAN_GRACE_MS = 5_000;
/** How often this node renews the device presence it holds: a third of the lease (cluster/device-presence.ts). */
const PRESENCE_RENEW_MS = 10_000;

export function createCommandService(deps: {
  store: CommandStore;
  vehicles: Pick<VehicleStore, 'get'>;
  devices: Pick<DeviceStore, 'protocolsOf'>;
  clock: Clock;
  events: EventPort;
  scope: VehicleScope;
  timeoutMs: number;
  /** Cluster mode: which node holds which vehicle's device connection, for `queue: false`. */
  presence?: DevicePresence;
  /** Cluster mode: tells the other nodes a command was queued, so the one holding the device sends it. */
  announce?: (command: CommandRecord) => void;
  log: { warn(obj: object, msg: string): void };
}) {
  const { store, clock, timeoutMs } = deps;
  const channels = new Map<ChannelName, CommandChannel>();

  function eventOf(command: CommandRecord): EventRecord {
    // Every status has its event type; the data is the command as the API shows it.
    return newEvent(command.organizationId, `command.${command.status}`, command.vehicleId, clock.now(), toCommandView(command));
  }

  async function change(organizationId: string, id: string, next: CommandChange): Promise<CommandRecord | undefined> {
    const changed = await store.change(organizationId, id, fromFor(next.status), next, eventOf);
    if (changed === undefined) return undefined;
    deps.events.emit('recorded', { events: [changed.event] });
    return changed.command;
  }

  /** The channel a new command takes by default: a Teltonika device of the vehicle, else an OsmAnd one, else MQTT. */
  async function defaultChannel(organizationId: string, vehicleId: string): Promise<ChannelName> {
    const protocols = await deps.devices.protocolsOf(organizationId, vehicleId);
    if (protocols.includes('teltonika')) return 'teltonika';
    if (protocols.includes('osmand')) return 'osmand';
    return 'mqtt';
  }

  async function create(who: Principal, vehicleId: string, body: CommandBody): Promise<CommandRecord> {
    const vehicle = await deps.vehicles.get(who.organizationId, vehicleId);
    if (vehicle === undefined) throw vehicleNotFound(vehicleId);
    if (vehicle.status === 'retired') throw new AppError('vehicle-retired', `Vehicle "${vehicleId}" is retired: it takes no commands.`);
    const params = paramsOf(body);
    const channel = body.channel ?? (await defaultChannel(who.organizationId, vehicleId));
    if (!CHANNEL_TYPES[channel].includes(body.type)) {
      throw invalidBody(`The ${channel} channel cannot carry \`${body.type}\`; it carries ${CHANNEL_TYPES[channel].map((t) => `\`${t}\``).join(', ')}.`, '/type', `is not carried by ${channel}`);
    }
    const bounds = expiryBounds(body.type);
    const seconds = body.expiresInSeconds ?? bounds.default;
    if (seconds > bounds.max) {
      throw invalidBody(`\`${body.type}\` expires after at most ${bounds.max} s.`, '/expiresInSeconds', `must be <= ${bounds.max} for ${body.type}`);
    }
    if (body.queue === false && !(await connected(who.organizationId, vehicleId, channel))) {
      throw new AppError('device-offline', `No ${channel} device of vehicle "${vehicleId}" is connected now; with \`queue: false\` the command is not kept.`);
    }
    const now = clock.now();
    const command: CommandRecord = {
      id: newTimeOrderedId('cmd', now), organizationId: who.organizationId, vehicleId, type: body.type, params, channel, status: 'queued',
      createdAt: now, createdBy: { type: actorTypeOf(who.credentialId), id: who.credentialId }, expiresAt: now + seconds * 1000,
      sentAt: null, completedAt: null, result: null, error: null,
    };
    // The audit entry written with the insert names the new command.
    noteNewId('cmd', command.id);
    const event = eventOf(command);
    const stored = await store.insert(command, event, MAX_UNFINISHED);
    if (stored === 'no-vehicle') throw vehicleNotFound(vehicleId);
    if (stored === 'full') {
      throw new AppError('command-queue-full', `Vehicle "${vehicleId}" has ${MAX_UNFINISHED} commands queued or sent already; cancel some or wait for them.`);
    }
    deps.events.emit('recorded', { events: [event] });
    offer(command);
    return command;
  }

  /** Hands a queued command to this node's channel, and in cluster mode to the other nodes'. */
  function offer(command: CommandRecord): void {
    channels.get(command.channel)?.offer(command);
    deps.announce?.(command);
  }

  async function connected(organizationId: string, vehicleId: string, channel: ChannelName): Promise<boolean> {
    if (channels.get(channel)?.connected(organizationId, vehicleId) === true) return true;
    return (await deps.presence?.elsewhere(presenceKey(organizationId, vehicleId, channel))) ?? false;
  }

  async function get(who: Principal, id: string): Promise<CommandRecord> {
    const found = await store.get(who.organizationId, id);
    // A command of a vehicle the credential does not see is not there for it.
    if (found === undefined || !(await deps.scope.sees(who, found.vehicleId))) throw notFound(id);
    return found;
  }

  async function cancel(who: Principal, id: string): Promise<CommandRecord> {
    const current = await get(who, id);
    if (current.status === 'cancelled') return current;
    const cancelled = current.status === 'queued' ? await change(who.organizationId, id, { status: 'cancelled', at: clock.now() }) : undefined;
    if (cancelled !== undefined) return cancelled;
    const now = (await store.get(who.organizationId, id)) ?? current;
    if (now.status === 'cancelled') return now;
    throw new AppError('command-not-queued', `Command "${id}" is ${now.status.replace('_', ' ')}: only a queued command can be cancelled.`);
  }

  async function list(who: Principal, vehicleId: string, query: CommandListQuery) {
    const limit = query.limit ?? COMMAND_LIST_LIMIT_DEFAULT;
    const before = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
    const statuses = query.status === undefined ? undefined : ([...new Set(query.status.split(','))] as CommandStatus[]);
    const found = await store.list(who.organizationId, vehicleId, { limit: limit + 1, ...(before === undefined ? {} : { before }), ...(statuses === undefined ? {} : { statuses }) });
    // A vehicle's commands go with it: none found may mean no such vehicle.
    if (found.length === 0 && (await deps.vehicles.get(who.organizationId, vehicleId)) === undefined) throw vehicleNotFound(vehicleId);
    const more = found.length > limit;
    const page = more ? found.slice(0, limit) : found;
    return { commands: page, nextCursor: more ? Buffer.from(page.at(-1)!.id).toString('base64url') : null };
  }

  async function types(who: Principal, vehicleId: string) {
    const vehicle = await deps.vehicles.get(who.organizationId, vehicleId);
    if (vehicle === undefined) throw vehicleNotFound(vehicleId);
    const channel = await defaultChannel(who.organizationId, vehicleId);
    return { channel, types: [...CHANNEL_TYPES[channel]] };
  }

  /** A queued command leaves for its device (sent, or delivered where no answer comes), unless it has expired. */
  async function handOver(command: CommandRecord, status: 'sent' | 'delivered'): Promise<CommandRecord | undefined> {
    const now = clock.now();
    if (command.expiresAt <= now) return undefined;
    return change(command.organizationId, command.id, { status, at: now });
  }

  /** The vehicles whose device is connected to this node, by channel: the presence this node holds. */
  const held = new Set<string>();

  // What the channels ask of the service.
  const link: CommandLink = {
    present(organizationId, vehicleId, channel, present) {
      const key = presenceKey(organizationId, vehicleId, channel);
      if (present) held.add(key);
      else held.delete(key);
      deps.presence?.set(key, present);
    },
    timeoutMs,
    after: (ms, fn) => clock.after(ms, fn),
    get: (organizationId, id) => store.get(organizationId, id),
    queued: (organizationId, vehicleId, channel) => store.queued(organizationId, vehicleId, channel, clock.now(), MAX_UNFINISHED),
    take: (command) => handOver(command, 'sent'),
    deliver: (command) => handOver(command, 'delivered'),
    async settle(organizationId, commandId, outcome: CommandOutcome, expected) {
      if (expected !== undefined) {
        const found = await store.get(organizationId, commandId);
        if (found === undefined || found.vehicleId !== expected.vehicleId || found.channel !== expected.channel) return false;
      }
      const changed = await change(organizationId, commandId, {
        status: outcome.status, at: clock.now(),
        result: outcome.status === 'timed_out' ? null : (outcome.result ?? null),
        error: outcome.status === 'succeeded' ? null : outcome.error,
      });
      return changed !== undefined;
    },
  };

  /** Queued commands past their expiry become `expired`; sent ones whose node went away, `timed_out`. */
  async function sweep(): Promise<number> {
    const now = clock.now();
    const due = await store.due(now, now - timeoutMs - ORPHAN_GRACE_MS, 500);
    let changed = 0;
    for (const command of due) {
      const next: CommandChange = command.status === 'queued'
        ? { status: 'expired', at: now }
        : { status: 'timed_out', at: now, error: 'no answer from the device (its connection was lost)' };
      if ((await change(command.organizationId, command.id, next)) !== undefined) changed += 1;
    }
    return changed;
  }

  let sweeping: Timer | undefined;
  let renewing: Timer | undefined;
  let stopped = false;
  function scheduleSweep() {
    if (stopped) return;
    sweeping = clock.after(SWEEP_MS, () => {
      void sweep()
        .catch((error: unknown) => deps.log.warn({ err: error }, 'command expiry sweep failed; tried again shortly'))
        .finally(scheduleSweep);
    });
  }
  function scheduleRenewal() {
    if (stopped || deps.presence === undefined) return;
    renewing = clock.after(PRESENCE_RENEW_MS, () => {
      void deps.presence!.renew([...held])
        .catch((error: unknown) => deps.log.warn({ err: error }, 'device presence not renewed; tried again shortly'))
        .finally(scheduleRenewal);
    });
  }

  return {
    create, get, cancel, list, types, link, sweep,
    /** A protocol offers its channel once it is made. */
    attach(channel: CommandChannel) {
      channels.set(channel.name, channel);
    },
    /** Another node queued a command: this node's channel sends it if it holds the device. */
    async offerQueued(organizationId: string, commandId: string) {
      const command = await store.get(organizationId, commandId);
      if (command?.status === 'queued') channels.get(command.channel)?.offer(command);
    },
    /** Whether a device's credential may use the vehicle's command topics: a vehicle of its organization that it sees. */
    deviceMayUse: async (who: Principal, vehicleId: string): Promise<boolean> =>
      (await deps.vehicles.get(who.organizationId, vehicleId)) !== undefined && (await deps.scope.sees(who, vehicleId)),
    connectedHere: (organizationId: string, vehicleId: string, channel: ChannelName) => channels.get(channel)?.connected(organizationId, vehicleId) === true,
    start() {
      stopped = false;
      scheduleSweep();
      scheduleRenewal();
    },
    stop() {
      stopped = true;
      sweeping?.cancel();
      renewing?.cancel();
      // This node holds no connection any more.
      for (const key of held) deps.presence?.set(key, false);
      held.clear();
    },
  };
}

function paramsOf(body: CommandBody): CommandParams {
  const given = body.params ?? {};
  switch (body.type) {
    case 'custom':
      if (given.text === undefined || given.output !== undefined || given.on !== undefined) throw invalidBody('`custom` takes `params: {text}` and nothing else.', '/params', 'must be {text}');
      return { text: given.text };
    case 'outputControl':
      if (given.output === undefined || given.on === undefined || given.text !== undefined) {
        throw invalidBody('`outputControl` takes `params: {output, on}` and nothing else.', '/params', 'must be {output, on}');
      }
      return { output: given.output, on: given.on };
    case 'engineStop':
    case 'engineResume':
    case 'positionSingle':
    case 'reboot':
      if (Object.keys(given).length > 0) throw invalidBody(`\`${body.type}\` takes no params.`, '/params', 'must be empty or absent');
      return {};
  }
}


function notFound(id: string): AppError {
  return new AppError('command-not-found', `No command "${id}" in this organization.`);
}

function decodeCursor(cursor: string): string {
  const id = Buffer.from(cursor, 'base64url').toString();
  if (!/^cmd_[A-Za-z0-9]{20}$/.test(id)) {
    throw new AppError('validation-failed', 'The cursor is not one this service issued.', { errors: [{ in: 'query', path: '/cursor', message: 'is not a valid cursor' }] });
  }
  return id;
}
