// Single-use tickets to attach a socket (docs/API.md "Live streams": the URL). A ticket is 256
// random bits, kept only as a SHA-256 hash, valid for the attach window, and gone once presented.
// In cluster mode the directory holds them too, so that a ticket works on any node, once.
import { createHash, randomBytes } from 'node:crypto';
import type { Principal, Scope } from '../auth/scopes.ts';
import type { Clock } from '../clock.ts';
import type { StreamEntry } from './directory.ts';
import type { Registry, StreamCluster } from './registry.ts';
import type { StreamSettings } from './settings.ts';
import type { Stream } from './stream.ts';

/** Whether a credential still stands (not revoked, deleted or expired). */
export type CredentialCheck = (organizationId: string, credentialId: string) => Promise<boolean>;

const hashTicket = (ticket: string) => createHash('sha256').update(ticket).digest('base64url');

export type Tickets = ReturnType<typeof createTickets>;

export function createTickets(deps: {
  registry: Registry;
  clock: Clock;
  settings: StreamSettings;
  cluster: StreamCluster | undefined;
  takeOver(entry: StreamEntry): Promise<Stream | undefined>;
  credentialLive: CredentialCheck | undefined;
}) {
  const { registry, clock, settings, cluster } = deps;
  const tickets = new Map<string, { streamId: string; expiresAt: number }>();

  // Tickets nobody redeemed leave once expired.
  const sweeper = setInterval(() => {
    const now = clock.now();
    for (const [hash, ticket] of tickets) {
      if (ticket.expiresAt <= now) tickets.delete(hash);
    }
  }, Math.min(settings.attachWindowMs, 30_000));
  sweeper.unref();

  /** A ticket valid for the attach window (or until `expiresAt`). */
  async function issue(stream: Stream | StreamEntry, expiresAt = clock.now() + settings.attachWindowMs): Promise<{ ticket: string; expiresAt: number }> {
    const ticket = randomBytes(32).toString('base64url');
    const hash = hashTicket(ticket);
    const held = registry.get(stream.id) !== undefined;
    if (held) tickets.set(hash, { streamId: stream.id, expiresAt });
    if (cluster !== undefined) {
      const stored = cluster.directory.putTicket(hash, stream.id, expiresAt);
      // A ticket for a stream held elsewhere exists only in the directory: it must be there.
      if (!held) await stored;
      else await stored.catch(() => undefined);
    }
    return { ticket, expiresAt };
  }

  /**
   * The principal a ticket stands for (the stream's creating credential), or undefined when it is
   * unknown, expired, used, for another stream, or its credential is gone. Presented once, it is
   * gone: it cannot be tried again, even on a refusal.
   */
  async function redeem(streamId: string, ticket: string): Promise<Principal | undefined> {
    const hash = hashTicket(ticket);
    let found = tickets.get(hash);
    tickets.delete(hash);
    if (cluster !== undefined) {
      // The directory decides, so that a ticket is redeemed once in the whole cluster. While it is
      // away, this node's own tickets still work here (a reconnection elsewhere waits for it).
      try {
        const id = await cluster.directory.takeTicket(hash);
        found = id === undefined ? undefined : { streamId: id, expiresAt: found?.expiresAt ?? Infinity };
      } catch {
        // found stays this node's own record, if any
      }
    }
    if (found === undefined || found.streamId !== streamId || found.expiresAt <= clock.now()) return undefined;
    let stream = registry.get(found.streamId);
    if (stream === undefined && cluster !== undefined) {
      const entry = await cluster.directory.get(found.streamId).catch(() => undefined);
      if (entry !== undefined) stream = await deps.takeOver(entry);
    }
    if (stream === undefined || stream.status !== 'connected') return undefined;
    // The revocation may not have reached this node (a bus outage), or the stream was held by none.
    if (deps.credentialLive !== undefined && !(await deps.credentialLive(stream.organizationId, stream.credentialId))) {
      registry.end(stream, 1008, 'credential revoked');
      return undefined;
    }
    if (stream.status !== 'connected') return undefined;
    return {
      organizationId: stream.organizationId, credentialId: stream.credentialId, scopes: new Set(stream.scopes as Scope[]), platform: false,
      ...(stream.credentialExpiresAt === null ? {} : { expiresAt: stream.credentialExpiresAt }),
    };
  }

  return {
    issue, redeem,
    stop: () => clearInterval(sweeper),
    get size() {
      return tickets.size;
    },
  };
}
