// HTTP written byte by byte on a real socket, for what no well-behaved client sends: malformed
// request lines, oversized headers, undecoded paths, bodies that trickle in. Every wait is bounded.
import net from 'node:net';
import type { FastifyInstance } from 'fastify';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Everything the server wrote, as text. */
  text: string;
}

/** The port of an app listening on 127.0.0.1 (listens on a free one first when it is not yet). */
export async function listeningPort(app: FastifyInstance): Promise<number> {
  if (!app.server.listening) await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (typeof address !== 'object' || address === null) throw new Error('not listening');
  return address.port;
}

export function parseResponse(text: string): RawResponse {
  const end = text.indexOf('\r\n\r\n');
  const head = end === -1 ? text : text.slice(0, end);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1] ?? 0), headers, body: end === -1 ? '' : text.slice(end + 4), text };
}

/**
 * Connects, writes `request`, and collects what comes back until the server closes the
 * connection (or `ms` pass, when the socket is destroyed and what came so far is returned).
 */
export function rawRequest(port: number, request: string | Buffer, ms = 5_000): Promise<RawResponse> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(), ms);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(parseResponse(Buffer.concat(chunks).toString('latin1')));
    });
    socket.write(request);
  });
}
