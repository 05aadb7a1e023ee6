// Commands over Teltonika connections (Codec 12): the live connections indexed by vehicle, one
// command in flight per connection, its answer matched by order (the tracker answers the command
// it was sent; Codec 12 carries no id), a timeout for the answer that never comes.
//
// What a tracker's Codec 12 frame does, whatever it holds, is never to close its connection: a bad
// CRC, a malformed message, a response with no command in flight, or a command (type 0x05) sent
// to the service are logged and dropped.
import type net from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { CommandChannel, CommandLink } from '../../commands/channel.ts';
import { type CommandRecord, teltonikaText } from '../../commands/model.ts';
import type { DeviceRecord } from '../../devices/store.ts';
import { RESPONSE_TYPE, decodeCodec12, encodeCodec12 } from './codec12.ts';
import { vehicleKey } from '../../vehicles/key.ts';

/** What this part needs of a connection: its socket and, once logged in, its device. */
export interface CommandConnection {
  socket: net.Socket;
  device: DeviceRecord | undefined;
}

interface Slot {
  /** The command sent and not yet answered, and its timeout. */
  inFlight: { command: CommandRecord; timer: { cancel(): void } } | undefined;
  /** A look at the queue is under way: another offer waits for it rather than racing it. */
  pumping: boolean;
  /** Asked to look again while a look was under way. */
  again: boolean;
  /**
   * The queue may hold a command for this connection: one was offered while another was in flight
   * or being sent, or more were queued than the last look sent. Only then does an answer look again.
   */
  more: boolean;
}

export function createTeltonikaCommands(link: CommandLink, log: FastifyBaseLogger) {
  const byVehicle = new Map<string, Set<CommandConnection>>();
  const slots = new WeakMap<CommandConnection, Slot>();

  /** Sends the vehicle's oldest queued command on `connection` unless one is in flight there. */
  async function pump(connection: CommandConnection): Promise<void> {
    const slot = slots.get(connection);
    const device = connection.device;
    if (slot === undefined || device === undefined || slot.inFlight !== undefined) return;
    if (slot.pumping) {
      slot.again = true;
      return;
    }
    slot.pumping = true;
    try {
      do {
        slot.again = false;
        const queued = await link.queued(device.organizationId, device.vehicleId, 'teltonika');
        for (const command of queued) {
          if (connection.socket.destroyed || slots.get(connection) !== slot) return;
          // Taken (queued → sent) before it is written: no other connection, here or on another node, sends it too.
          const taken = await link.take(command);
          if (taken === undefined) continue;
          if (!connection.socket.writable) {
            // The connection went while the command was being taken: it times out as unanswered.
            await link.settle(taken.organizationId, taken.id, { status: 'timed_out', error: 'the device\'s connection closed as the command was sent' });
            return;
          }
          slot.more = slot.again || queued.indexOf(command) < queued.length - 1;
          slot.inFlight = { command: taken, timer: link.after(link.timeoutMs, () => void timedOut(connection, slot, taken)) };
          connection.socket.write(encodeCodec12(teltonikaText(taken)));
          log.debug({ imei: device.identifier, commandId: taken.id }, 'Teltonika command sent');
          return;
        }
      } while (slot.again);
      slot.more = false;
    } catch (error) {
      slot.more = true;
      log.warn({ err: error, imei: device.identifier }, 'Teltonika commands not sent; tried again at the next offer or login');
    } finally {
      slot.pumping = false;
    }
  }

  async function timedOut(connection: CommandConnection, slot: Slot, command: CommandRecord) {
    if (slot.inFlight?.command.id !== command.id) return;
    slot.inFlight = undefined;
    await link.settle(command.organizationId, command.id, { status: 'timed_out', error: `no answer from the device within ${Math.round(link.timeoutMs / 1000)} s` })
      .catch((error: unknown) => log.warn({ err: error, commandId: command.id }, 'command timeout not recorded; the sweep records it'));
    if (!connection.socket.destroyed) await pump(connection);
  }

  const channel: CommandChannel = {
    name: 'teltonika',
    connected: (organizationId, vehicleId) => (byVehicle.get(vehicleKey(organizationId, vehicleId))?.size ?? 0) > 0,
    offer(command) {
      const connections = byVehicle.get(vehicleKey(command.organizationId, command.vehicleId)) ?? [];
      for (const connection of connections) {
        const slot = slots.get(connection);
        if (slot !== undefined && slot.inFlight === undefined) {
          void pump(connection);
          return;
        }
      }
      // Every connection has a command in flight: the first answer takes this one.
      for (const connection of connections) {
        const slot = slots.get(connection);
        if (slot !== undefined) slot.more = true;
      }
    },
  };

  return {
    channel,

    /** A tracker logged in: it takes its vehicle's queued commands, oldest first. */
    loggedIn(connection: CommandConnection) {
      const device = connection.device!;
      const key = vehicleKey(device.organizationId, device.vehicleId);
      let set = byVehicle.get(key);
      if (set === undefined) {
        byVehicle.set(key, (set = new Set()));
        link.present(device.organizationId, device.vehicleId, 'teltonika', true);
      }
      set.add(connection);
      slots.set(connection, { inFlight: undefined, pumping: false, again: false, more: true });
      void pump(connection);
    },

    /** The connection closed: a command in flight on it times out when its timer fires (no answer can come now). */
    closed(connection: CommandConnection) {
      const device = connection.device;
      if (device === undefined) return;
      const key = vehicleKey(device.organizationId, device.vehicleId);
      const set = byVehicle.get(key);
      if (set?.delete(connection) !== true || set.size > 0) return;
      byVehicle.delete(key);
      link.present(device.organizationId, device.vehicleId, 'teltonika', false);
    },

    /** A Codec 12 frame from the tracker. */
    async received(connection: CommandConnection, data: Uint8Array, crcOk: boolean) {
      const imei = connection.device?.identifier;
      if (!crcOk) return log.info({ imei }, 'Teltonika Codec 12 frame with a bad CRC dropped');
      const message = decodeCodec12(data);
      if ('malformed' in message) return log.info({ imei, detail: message.malformed }, 'malformed Teltonika Codec 12 frame dropped');
      if (message.type !== RESPONSE_TYPE) return log.info({ imei, type: message.type }, 'Teltonika Codec 12 frame that is not a response dropped');
      const slot = slots.get(connection);
      const inFlight = slot?.inFlight;
      if (slot === undefined || inFlight === undefined) return log.info({ imei }, 'Teltonika Codec 12 response with no command in flight dropped');
      inFlight.timer.cancel();
      slot.inFlight = undefined;
      try {
        await link.settle(inFlight.command.organizationId, inFlight.command.id, { status: 'succeeded', result: message.text });
      } catch (error) {
        // Not recorded: the sweep times the command out; the connection goes on.
        log.warn({ err: error, imei, commandId: inFlight.command.id }, 'Teltonika command answer not recorded');
      }
      if (slot.more) await pump(connection);
    },
  };
}
