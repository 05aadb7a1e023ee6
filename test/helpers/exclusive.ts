// The browser tests wait for what a page shows within fixed times, and a Chromium starved by another
// browser suite beside it misses them. They take turns through a lock directory (mkdir is atomic),
// whatever test files run in parallel.
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** A lock older than this was left by a run that was killed: it is taken over. */
const STALE_MS = 10 * 60_000;

/**
 * Waits until no other test holds the machine-load lock, takes it, and returns its release. For a
 * test file whose tests must all run under it (take it in `before`, release it in `after`).
 */
export async function acquireMachineLoadLock(): Promise<() => void> {
  const lock = path.join(tmpdir(), 'fleet-test-machine-load.lock');
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      try {
        if (Date.now() - statSync(lock).mtimeMs > STALE_MS) rmSync(lock, { recursive: true, force: true });
      } catch {
        // Released meanwhile: try again.
      }
      await sleep(200);
    }
  }
  return () => rmSync(lock, { recursive: true, force: true });
}
