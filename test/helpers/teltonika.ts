// A Teltonika tracker over a real TCP socket, for the tests: what it sends, what it is answered.
import net from 'node:net';
import { CODEC_8E } from '../../src/protocols/teltonika/decode.ts';
import { type EncodableRecord, encodePacket, imeiLogin } from '../../src/protocols/teltonika/encode.ts';

export interface Tracker {
  socket: net.Socket;
  send(bytes: Uint8Array): void;
  /** The next `n` bytes answered, or 'closed' if the connection ends first, or 'timeout'. */
  read(n: number, ms?: number): Promise<Buffer | 'closed' | 'timeout'>;
  closed: Promise<void>;
  login(imei: string): Promise<Buffer | 'closed' | 'timeout'>;
  end(): void;
}

/** `localAddress`: another loopback address (127.0.0.2, ...) to connect from, as another client would. */
export async function connectTracker(port: number, opened: Tracker[] = [], localAddress?: string): Promise<Tracker> {
  const socket = net.connect({ port, host: '127.0.0.1', noDelay: true, ...(localAddress === undefined ? {} : { localAddress }) });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  let received = Buffer.alloc(0);
  let ended = false;
  let wake: (() => void) | undefined;
  socket.on('data', (chunk: Buffer) => {
    received = Buffer.concat([received, chunk]);
    wake?.();
  });
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => {
    ended = true;
    wake?.();
    resolve();
  }));
  async function read(n: number, ms = 3000): Promise<Buffer | 'closed' | 'timeout'> {
    const deadline = Date.now() + ms;
    while (received.length < n) {
      if (ended) return 'closed';
      const left = deadline - Date.now();
      if (left <= 0) return 'timeout';
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    const out = received.subarray(0, n);
    received = received.subarray(n);
    return out;
  }
  const tracker: Tracker = {
    socket, read, closed,
    send: (bytes) => void socket.write(bytes),
    login: (imei) => {
      socket.write(imeiLogin(imei));
      return read(1);
    },
    end: () => socket.destroy(),
  };
  opened.push(tracker);
  return tracker;
}

/** A record at `timestamp` with a fix at (lat, lng) and a few IO elements. */
export function fix(timestamp: number, lat: number, lng: number, speed = 50): EncodableRecord {
  return {
    timestamp, priority: 0, latitude: lat, longitude: lng, altitude: 100, angle: 90, satellites: 8, speed, eventId: 0,
    io: [{ id: 239, size: 1, value: 1 }, { id: 113, size: 1, value: 80 }, { id: 16, size: 4, value: 5000 }],
  };
}

export const packetOf = (records: EncodableRecord[]) => encodePacket(CODEC_8E, records);

export const count = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};

// The documentation's examples: Codec 8 (1st: one record, 5 IO elements; 2nd: one record;
// 3rd: two records) and Codec 8 Extended (one record, 2-byte ids, 8-byte values), and the IMEI.
export const DOC = {
  codec8First: '000000000000003608010000016B40D8EA30010000000000000000000000000000000105021503010101425E0F01F10000601A014E0000000000000000010000C7CF',
  codec8Second: '000000000000002808010000016B40D9AD80010000000000000000000000000000000103021503010101425E100000010000F22A',
  codec8Third: '000000000000004308020000016B40D57B480100000000000000000000000000000001010101000000000000016B40D5C198010000000000000000000000000000000101010101000000020000252C',
  codec8E: '000000000000004A8E010000016B412CEE000100000000000000000000000000000000010005000100010100010011001D00010010015E2C880002000B000000003544C87A000E000000001DD7E06A00000100002994',
  imei: '000F333536333037303432343431303133',
};

/** The text of the next Codec 12 command the tracker is sent, or what came instead (`closed`, `timeout`). */
export async function readCommand(tracker: Tracker, ms = 3_000): Promise<string> {
  const head = await tracker.read(8 + 3 + 4, ms);
  if (!Buffer.isBuffer(head)) return head;
  const size = head.readUInt32BE(11);
  const rest = await tracker.read(size + 1 + 4);
  if (!Buffer.isBuffer(rest)) return rest;
  return rest.subarray(0, size).toString('latin1');
}
