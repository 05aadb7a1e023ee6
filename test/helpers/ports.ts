// A port for a server a test starts later (a service's device ports are set by number: 0 turns them
// off). Test files run in parallel processes, so "bind to 0, read the port, close" is not enough:
// between the close and the service's bind, the kernel may hand the same port to another process's
// outgoing connection or `listen(0)`, and another file's test may be given it too.
//
// So the port is taken below the kernel's ephemeral range (which it never hands out by itself), at
// random, checked free by binding it, and reserved across processes by creating a file named after
// it (exclusive create): no two callers within RESERVATION_MS get the same port.
import { closeSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const RESERVATIONS = join(tmpdir(), 'fleet-test-ports');
const RESERVATION_MS = 30 * 60_000;
const LOWEST = 10_000;

function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

const HIGHEST = ephemeralLow() - 1;

function reserve(port: number): boolean {
  const file = join(RESERVATIONS, String(port));
  try {
    closeSync(openSync(file, 'wx'));
    return true;
  } catch {
    // Taken by a caller within the last RESERVATION_MS, or a stale file of an earlier run.
    try {
      if (Date.now() - statSync(file).mtimeMs < RESERVATION_MS) return false;
      unlinkSync(file);
      closeSync(openSync(file, 'wx'));
      return true;
    } catch {
      return false;
    }
  }
}

function bindable(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

async function kernelPort(host: string): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (typeof address !== 'object' || address === null) throw new Error('no port');
  return address.port;
}

/** A port nothing listens on, reserved for this caller among the test processes of this machine. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  if (HIGHEST - LOWEST < 1_000) return kernelPort(host);
  mkdirSync(RESERVATIONS, { recursive: true });
  for (let tries = 0; tries < 200; tries += 1) {
    const port = LOWEST + Math.floor(Math.random() * (HIGHEST - LOWEST + 1));
    if (!reserve(port)) continue;
    if (await bindable(port, host)) return port;
  }
  return kernelPort(host);
}
