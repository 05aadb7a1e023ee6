// A webhook receiver on a real local port: it records every request, and answers what the test
// says (a status, a redirect, a refused connection by being closed).
import { type IncomingHttpHeaders, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitUntil } from './wait.ts';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
  /** The status this request was answered with. */
  status?: number;
}

export async function startReceiver(answer: (req: Received) => { status: number; headers?: Record<string, string> } = () => ({ status: 204 })) {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const entry = { headers: req.headers, body: Buffer.concat(chunks).toString(), at: Date.now() };
      received.push(entry);
      const reply = answer(entry);
      (entry as Received).status = reply.status;
      res.writeHead(reply.status, reply.headers).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    received,
    waitFor(condition: () => boolean, ms = 10_000, what = 'deliveries'): Promise<void> {
      return waitUntil(condition, what, ms, { seen: () => `${received.length} received` });
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
