/** Time as the services see it; tests pass their own to move time without sleeping. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

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
