// Calendar dates in an IANA time zone, as summary reports and report schedules count them: a
// date's day runs from its first instant (local midnight, or the first time after it on a day
// whose midnight a clock change skips) to the next date's.

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });
    if (formatters.size < 1000) formatters.set(timeZone, f);
  }
  return f;
}

/** Whether Intl knows the zone (an IANA name such as `Europe/Berlin`, or `UTC`). */
export function isTimeZone(timeZone: string): boolean {
  try {
    formatter(timeZone);
    return true;
  } catch {
    return false;
  }
}

/** The wall-clock time in the zone at `t` (ms), as if it were UTC. */
function wallClock(timeZone: string, t: number): number {
  const parts: Record<string, number> = {};
  for (const p of formatter(timeZone).formatToParts(new Date(t))) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  return Date.UTC(parts.year!, parts.month! - 1, parts.day, parts.hour, parts.minute, parts.second);
}

/** The zone's offset from UTC at `t`, ms (whole seconds). */
export const offsetAt = (timeZone: string, t: number): number => wallClock(timeZone, Math.floor(t / 1000) * 1000) - Math.floor(t / 1000) * 1000;

/** `YYYY-MM-DD` as [year, month, day], or undefined when it is no calendar date. */
export function parseDate(date: string): [number, number, number] | undefined {
  const m = DATE.exec(date);
  if (m === null) return undefined;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const t = new Date(Date.UTC(y, mo - 1, d));
  return t.getUTCFullYear() === y && t.getUTCMonth() === mo - 1 && t.getUTCDate() === d ? [y, mo, d] : undefined;
}

/** The date `days` after `date` (both `YYYY-MM-DD`). */
export function addDays(date: string, days: number): string {
  const [y, m, d] = parseDate(date)!;
  return new Date(Date.UTC(y, m - 1, d + days)).toISOString().slice(0, 10);
}

/** Days from `from` to `to` (dates). */
export const daysBetween = (from: string, to: string): number => {
  const [a, b] = [parseDate(from)!, parseDate(to)!];
  return Math.round((Date.UTC(b[0], b[1] - 1, b[2]) - Date.UTC(a[0], a[1] - 1, a[2])) / 86_400_000);
};

/** The first instant (ms) of `date` in the zone. */
export function startOfDate(date: string, timeZone: string): number {
  const [y, m, d] = parseDate(date)!;
  const wall = Date.UTC(y, m - 1, d);
  // The offset before the day starts, then at the guess: a guess past a change takes the new one.
  let t = wall - offsetAt(timeZone, wall - 86_400_000 / 2);
  t = wall - offsetAt(timeZone, t);
  // Midnight skipped by a change: the day starts when the clock reads its date.
  while (localDate(t, timeZone) < date) t += 15 * 60_000;
  while (localDate(t - 1, timeZone) >= date) t -= 15 * 60_000;
  return t;
}

/** The date (`YYYY-MM-DD`) in the zone at `t`. */
export function localDate(t: number, timeZone: string): string {
  return new Date(wallClock(timeZone, t)).toISOString().slice(0, 10);
}
