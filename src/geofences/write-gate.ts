// One geofence write at a time per organization. Checking a geometry of 10,000 positions holds
// the event loop for up to a tenth of a second or so (crossings.ts); several writes of one
// organization arriving together would otherwise run their checks back to back, and every other
// organization's requests would wait behind all of them. Here each write waits for the one before
// it, then for a turn of the event loop (so that what else is ready runs first), and only then is
// checked: others' requests wait for one check at most. Past MAX_WAITING waiting writes, another
// answers 429 with Retry-After at once, holding nothing (its body is not kept waiting).
import { AppError } from '../errors.ts';
import { setImmediate as nextTurn } from 'node:timers/promises';

/** Writes of one organization that may wait behind the one in progress. */
export const MAX_WAITING = 4;

export function createWriteGate() {
  const queues = new Map<string, (() => void)[]>();

  return async function oneAtATime<T>(organizationId: string, write: () => Promise<T>): Promise<T> {
    const waiting = queues.get(organizationId);
    if (waiting === undefined) {
      queues.set(organizationId, []);
    } else {
      if (waiting.length >= MAX_WAITING) {
        throw new AppError('rate-limited', `This organization already has ${MAX_WAITING + 1} geofence writes in progress; retry after the delay in Retry-After.`, {
          headers: { 'retry-after': '1' },
        });
      }
      await new Promise<void>((resolve) => waiting.push(resolve));
    }
    try {
      await nextTurn();
      return await write();
    } finally {
      const queue = queues.get(organizationId)!;
      const next = queue.shift();
      if (next === undefined) queues.delete(organizationId);
      else next();
    }
  };
}
