// The `date-time` format every timestamp a client sends is checked against: RFC 3339 with a
// time zone (`Z` or an offset), `T` or a space between date and time, any fraction of a second
// (kept to the millisecond). Every string it accepts is one `Date.parse` turns into a time (its
// tests hold it to that), so a timestamp that passed validation always has one; a leap second
// (`:60`), which JavaScript times cannot hold, is refused with the rest.
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):?(\d{2}))$/;

const SPACE = 0x20;
const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysIn(year: number, month: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return month === 2 && leap ? 29 : DAYS[month - 1]!;
}

export function isDateTime(text: string): boolean {
  const m = DATE_TIME.exec(text);
  if (m === null) return false;
  const month = Number(m[2]);
  const day = Number(m[3]);
  if (month < 1 || month > 12 || day < 1 || day > daysIn(Number(m[1]), month)) return false;
  if (Number(m[4]) > 23 || Number(m[5]) > 59 || Number(m[6]) > 59) return false;
  if (m[7] !== undefined && (Number(m[7]) > 23 || Number(m[8]) > 59)) return false;
  // With a space, V8 reads the text by its older, looser rules, which fail some early years.
  return text.charCodeAt(10) !== SPACE || !Number.isNaN(Date.parse(text));
}
