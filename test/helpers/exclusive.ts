// Tests that load the machine on purpose (the overload test, the soak) measure what a service does
// under a load they choose; run beside each other, each one's load distorts the other's verdict.
// The browser tests wait for what a page shows within fixed times, and a starved Chromium beside a
// soak misses them. They all take turns through a lock directory (mkdir is atomic), whatever test
// files run in parallel.
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

/** Runs `fn` while no other test holds the machine-load lock. */
export async function underMachineLoadLock<T>(fn: () => Promise<T>): Promise<T> {
  const release = await acquireMachineLoadLock();
  try {
    return await fn();
  } finally {
    release();
  }
}
