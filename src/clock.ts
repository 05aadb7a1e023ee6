/** A pending call of `Clock.after`. */
export interface Timer {
  cancel(): void;
}

/**
 * Time as the services see it, and waits measured in it: tests pass their own clock to move time
 * (timers included) without sleeping, so a wait computed from `now()` never runs on another clock.
 */
export interface Clock {
  now(): number;
  /** Calls `fn` once `ms` of this clock's time have passed. A timer never keeps the process alive. */
  after(ms: number, fn: () => void): Timer;
}

/** setTimeout's longest delay: a longer one fires at once, so longer waits are made in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export const systemClock: Clock = {
  now: () => Date.now(),
  after(ms, fn) {
    let timer: NodeJS.Timeout;
    const arm = (wait: number) => {
      const at = Date.now() + wait;
      timer = setTimeout(() => (wait > MAX_TIMER_MS ? arm(at - Date.now()) : fn()), Math.max(0, Math.min(wait, MAX_TIMER_MS)));
      timer.unref();
    };
    arm(ms);
    return { cancel: () => clearTimeout(timer) };
  },
};

// Formatting a date is a runtime call that costs more than a whole cached read of the latest
// state; timestamps served together mostly share their minute. So the text up to the minute is
// kept for the last minute seen, and only seconds and milliseconds are written per call.
let cachedMinute = Number.NaN;
let cachedPrefix = '';

/** `ms` as `Date#toISOString` writes it (`2026-11-22T08:00:05.250Z`). */
export function iso(ms: number): string {
  if (!Number.isSafeInteger(ms)) return new Date(ms).toISOString();
  const minute = Math.floor(ms / 60_000);
  if (minute !== cachedMinute) {
    const full = new Date(ms).toISOString();
    cachedMinute = minute;
    cachedPrefix = full.slice(0, -7); // up to "HH:MM:", before "SS.mmmZ"
  }
  const rest = ms - minute * 60_000;
  const seconds = Math.floor(rest / 1000);
  const millis = rest - seconds * 1000;
  return `${cachedPrefix}${seconds < 10 ? '0' : ''}${seconds}.${millis < 100 ? (millis < 10 ? '00' : '0') : ''}${millis}Z`;
}
