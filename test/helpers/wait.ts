// The one way a test waits for what nothing tells it about (a row written, a log line, a process
// gone): it polls the condition itself, never a fixed time, and every wait is bounded.
import { setTimeout as sleep } from 'node:timers/promises';

export interface WaitOptions {
  /** What there was instead, for the message of a wait that timed out. */
  seen?: () => string;
  /** How often the condition is checked, ms (default 20); longer for one that costs a request. */
  every?: number;
}

/**
 * Polls `condition` until it holds; fails after `ms` naming `what`. A condition that throws ends
 * the wait with its error.
 */
export async function waitUntil(condition: () => boolean | Promise<boolean>, what: string, ms = 5_000, options: WaitOptions = {}): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}${options.seen === undefined ? '' : `; ${options.seen()}`}`);
    await sleep(options.every ?? 20);
  }
}
