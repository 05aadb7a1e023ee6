// The Teltonika TCP listener: a tracker logs in with its IMEI, then sends AVL packets, each
// answered with its record count once its records are durably committed.
//
// What a tracker sees:
// - IMEI of no registered device (or not an IMEI): 0x00, and the connection is closed; likewise
//   any IMEI from an address held back for presenting too many unknown ones (../guard.ts).
// - stored (duplicates included): the 4-byte record count.
// - bad CRC: no answer; the connection stays open and the tracker sends the packet again.
// - records that can never be stored (refused by validation, e.g. a time far in the future): the
//   count all the same, and the packet is dropped and logged: resending could not help, and the
//   tracker would otherwise resend it forever, its newer records stuck behind it.
// - vehicle retired or gone, device deleted, store failing: no answer, the connection is closed;
//   the tracker keeps its records and sends them again after reconnecting.
// - bytes that cannot be a packet (bad preamble, length over 64 KiB, unknown codec, records that
//   do not parse), or nothing at all for the idle timeout: the connection is closed.
// - no IMEI within the login timeout, or a packet (or IMEI) begun and not finished within the
//   packet timeout, however its bytes trickle in: the connection is closed. So is a connection
//   past the limit of connections in all or from its address, at once (limits.ts).
import net from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { Registry } from 'prom-client';
import type { CommandChannel, CommandLink } from '../../commands/channel.ts';
import type { DevicePortsConfig } from '../../config.ts';
import type { DeviceRecord } from '../../devices/store.ts';
import { isAppError } from '../../errors.ts';
import type { ProtocolIngest } from '../ingest.ts';
import { type ProtocolListener, createProtocolListener } from '../listener.ts';
import { MalformedPacket, decodeAvlData, toTelemetry } from './decode.ts';
import { type Frame, Framer, FramingError } from './frame.ts';
import { createTeltonikaCommands } from './commands.ts';
import { createConnectionLimits } from './limits.ts';

const ACCEPTED = Buffer.from([0x01]);
const REFUSED = Buffer.from([0x00]);

interface Connection {
  socket: net.Socket;
  framer: Framer;
  device: DeviceRecord | undefined;
  /** Settles once every frame received so far has been answered. */
  turn: Promise<void>;
  /** Until the IMEI arrives, then until the frame begun has arrived whole (none while frames are answered). */
  deadline: NodeJS.Timeout | undefined;
}

export function createTeltonikaListener(deps: {
  host: string;
  port: number;
  idleMs: number;
  limits: DevicePortsConfig;
  registry: Registry;
  ingest: ProtocolIngest;
  /** Commands to the trackers (Codec 12); none: the listener only takes telemetry. */
  commands?: CommandLink;
  log: FastifyBaseLogger;
}): ProtocolListener & { channel?: CommandChannel } {
  const { host, port, idleMs, ingest, log } = deps;
  const commands = deps.commands === undefined ? undefined : createTeltonikaCommands(deps.commands, log);
  const { loginTimeoutMs, packetTimeoutMs } = deps.limits;
  const limits = createConnectionLimits({ connections: deps.limits.connections, perAddress: deps.limits.connectionsPerAddress, registry: deps.registry });
  const connections = new Set<Connection>();
  let server: net.Server | undefined;
  let closing = false;

  function close(connection: Connection, why: string, detail?: Record<string, unknown>) {
    log.debug({ imei: connection.device?.identifier, remote: connection.socket.remoteAddress, ...detail }, `Teltonika connection closed: ${why}`);
    connection.socket.destroy();
  }

  /** 0x00, then the connection ends; a peer that never closes its side is cut off after the login timeout. */
  function refuse(connection: Connection) {
    connection.socket.end(REFUSED);
    clearTimeout(connection.deadline);
    connection.deadline = setTimeout(() => connection.socket.destroy(), loginTimeoutMs);
  }

  async function login(connection: Connection, imei: string) {
    const remote = connection.socket.remoteAddress;
    const admission = await ingest.admit('teltonika', imei, remote);
    switch (admission.status) {
      case 'held-back':
        refuse(connection);
        log.debug({ imei: imei.slice(0, 20), remote }, 'Teltonika login refused: the address is held back for unknown IMEIs');
        return;
      case 'unknown':
        refuse(connection);
        log.info({ imei: imei.slice(0, 20), remote }, 'Teltonika login refused: no such device');
        return;
      case 'admitted':
        connection.device = admission.device;
        connection.socket.write(ACCEPTED);
        commands?.loggedIn(connection);
    }
  }

  async function packet(connection: Connection, data: Uint8Array, crcOk: boolean) {
    if (!crcOk) {
      log.debug({ imei: connection.device!.identifier }, 'Teltonika packet with a bad CRC: not acknowledged');
      return;
    }
    const decoded = decodeAvlData(data);
    // Looked up again: the device may have been deleted (or its vehicle) since the login.
    const device = await ingest.current(connection.device!);
    if (device === undefined) return close(connection, 'the device is no longer registered');
    connection.device = device;
    try {
      await ingest.ingest(device, decoded.records.map(toTelemetry));
    } catch (error) {
      if (!isAppError(error) || error.code !== 'validation-failed') throw error;
      log.warn({ imei: device.identifier, vehicleId: device.vehicleId, detail: error.message }, 'Teltonika packet dropped: its records cannot be stored');
    }
    if (connection.socket.writable) connection.socket.write(recordCount(decoded.records.length));
  }

  async function answer(connection: Connection, frame: Frame) {
    if (connection.socket.destroyed || closing) return;
    if (frame.kind === 'imei') {
      if (connection.device !== undefined) return close(connection, 'a second IMEI');
      return login(connection, frame.imei);
    }
    if (connection.device === undefined) return; // refused at login; the socket is ending
    if (frame.kind === 'codec12') {
      // A tracker's answer to a command: never a reason to close its connection.
      if (commands === undefined) return log.info({ imei: connection.device.identifier }, 'Teltonika Codec 12 frame dropped: commands are off');
      return commands.received(connection, frame.data, frame.crcOk);
    }
    try {
      await packet(connection, frame.data, frame.crcOk);
    } catch (error) {
      if (error instanceof MalformedPacket) return close(connection, 'malformed AVL data', { detail: error.message });
      const refused = isAppError(error) && (error.code === 'vehicle-retired' || error.code === 'vehicle-not-found');
      if (!refused) log.error({ err: error, imei: connection.device.identifier }, 'Teltonika packet not stored');
      close(connection, refused ? error.message : 'the records could not be committed');
    }
  }

  /** Closes the connection after `ms` unless cleared first: the idle timer restarts at every byte, this one does not. */
  function deadline(connection: Connection, ms: number, why: 'login-timeout' | 'packet-timeout') {
    clearTimeout(connection.deadline);
    connection.deadline = setTimeout(() => {
      limits.cut(why);
      close(connection, why === 'login-timeout' ? 'no IMEI in time' : 'a packet not finished in time');
    }, ms);
  }

  function accept(socket: net.Socket) {
    socket.on('error', (error) => log.debug({ err: error }, 'Teltonika socket error'));
    if (closing) {
      socket.destroy();
      return;
    }
    const refused = limits.admit(socket);
    if (refused !== undefined) {
      limits.cut(refused);
      log.debug({ remote: socket.remoteAddress, reason: refused }, 'Teltonika connection refused');
      socket.destroy();
      return;
    }
    const connection: Connection = { socket, framer: new Framer(), device: undefined, turn: Promise.resolve(), deadline: undefined };
    connections.add(connection);
    deadline(connection, loginTimeoutMs, 'login-timeout');
    socket.setTimeout(idleMs);
    socket.on('timeout', () => close(connection, 'idle'));
    socket.on('close', () => {
      clearTimeout(connection.deadline);
      connections.delete(connection);
      commands?.closed(connection);
    });
    socket.on('data', (chunk: Buffer) => {
      // Refused (our side has ended): what else it sends is not read, nor its timer reset.
      if (!socket.writable) return;
      let frames: Frame[];
      try {
        frames = connection.framer.push(chunk);
      } catch (error) {
        if (!(error instanceof FramingError)) throw error;
        return close(connection, 'not Teltonika framing', { detail: error.message });
      }
      if (frames.length === 0) {
        // Logged in, a packet has begun: it must now arrive whole in time.
        if (connection.device !== undefined && connection.deadline === undefined && connection.framer.buffered > 0) {
          deadline(connection, packetTimeoutMs, 'packet-timeout');
        }
        return;
      }
      // The IMEI has arrived (or a packet whole): the time it takes to answer is ours, not the tracker's.
      clearTimeout(connection.deadline);
      connection.deadline = undefined;
      // One frame answered at a time, in order; reading pauses meanwhile, so what a tracker sends
      // ahead waits in the kernel's buffers, not in ours.
      socket.pause();
      connection.turn = connection.turn
        .then(async () => {
          for (const frame of frames) await answer(connection, frame);
        })
        .catch((error: unknown) => {
          log.error({ err: error }, 'Teltonika frame handling failed');
          socket.destroy();
        })
        .finally(() => {
          if (socket.destroyed) return;
          // The rest of a frame begun in the last chunk is due in its own time from now.
          if (connection.framer.buffered > 0 && socket.writable) deadline(connection, packetTimeoutMs, 'packet-timeout');
          socket.resume();
        });
    });
  }

  async function listen(): Promise<number> {
    // noDelay: an acknowledgement is a few bytes the tracker waits for before sending more.
    const tcp = net.createServer({ noDelay: true }, accept);
    await new Promise<void>((resolve, reject) => {
      tcp.once('error', reject);
      tcp.listen({ port, host, backlog: 4096 }, () => {
        tcp.off('error', reject);
        resolve();
      });
    });
    tcp.on('error', (error) => log.error({ err: error }, 'Teltonika listener error'));
    server = tcp;
    return (tcp.address() as net.AddressInfo).port;
  }

  /** Stops accepting, answers the packets already received (their commits), then closes every connection. */
  async function shutDown() {
    closing = true;
    if (server === undefined) return;
    const tcp = server;
    const closed = new Promise<void>((resolve) => tcp.close(() => resolve()));
    await Promise.allSettled([...connections].map((c) => c.turn));
    for (const connection of connections) connection.socket.destroy();
    await closed;
  }

  return {
    ...createProtocolListener({ name: 'Teltonika', ingestion: 'Teltonika', host, port, log, listen, close: shutDown }),
    ...(commands === undefined ? {} : { channel: commands.channel }),
  };
}

function recordCount(n: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(n);
  return out;
}
