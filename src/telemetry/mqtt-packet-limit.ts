// A size limit on incoming MQTT packets, which aedes does not have. MQTT allows packets of up to
// 256 MiB, and the parser buffers a whole packet before anyone sees it: without a limit one
// unauthenticated connection (a CONNECT is a packet too) could make the service hold 256 MiB.
// The scanner reads only the fixed headers (type byte, then the remaining length as a varint) and
// skips the bodies, passing every byte through unchanged; a packet announced above the limit
// closes the connection before its body is read.
import { Duplex, Transform, type TransformCallback } from 'node:stream';
import type { Socket } from 'node:net';

/** As HTTP's body limit (1 MiB), plus room for a PUBLISH's topic and packet id. */
export const MAX_PACKET_BYTES = 1024 * 1024 + 1024;

export class PacketTooLarge extends Error {}

class PacketScanner extends Transform {
  #remaining = 0;
  #inLength = false;
  #length = 0;
  #multiplier = 1;
  readonly max: number;

  constructor(max: number) {
    super();
    this.max = max;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback) {
    let i = 0;
    while (i < chunk.length) {
      if (this.#remaining > 0) {
        const skip = Math.min(this.#remaining, chunk.length - i);
        this.#remaining -= skip;
        i += skip;
      } else if (!this.#inLength) {
        // The packet type byte; the remaining length follows.
        this.#inLength = true;
        this.#length = 0;
        this.#multiplier = 1;
        i++;
      } else {
        const byte = chunk[i++]!;
        this.#length += (byte & 0x7f) * this.#multiplier;
        this.#multiplier *= 128;
        if (this.#length > this.max) {
          done(new PacketTooLarge(`an MQTT packet of ${this.#length} bytes or more (at most ${this.max})`));
          return;
        }
        if ((byte & 0x80) === 0) {
          this.#inLength = false;
          this.#remaining = this.#length;
        }
      }
    }
    done(null, chunk);
  }
}

/** The socket as aedes should see it: what it reads has passed the scanner; what it writes goes straight out. */
export function limitPacketSize(socket: Socket, max = MAX_PACKET_BYTES): Duplex {
  const scanner = new PacketScanner(max);
  socket.pipe(scanner);
  // A refused packet, or the socket failing, ends both sides.
  scanner.once('error', () => socket.destroy());
  return Duplex.from({ readable: scanner, writable: socket });
}
