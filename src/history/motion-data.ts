// The fields the trip machine reads (location, speed, odometer), read straight from a record's
// stored JSON text without building the rest of it. A day at 1 Hz is 86,400 records; parsing
// each whole (JSON.parse) was most of what trips and stops cost. This reader makes no object but
// the result and its location, and skips the other fields, diagnostics included, character by
// character.
//
// The stored text is what the store wrote with JSON.stringify of a validated record (a flat
// object of numbers, `location` {lat, lng}, and `diagnostics`, flat, of numbers, strings and
// booleans), with its members in any order. Anything else (whitespace, a member of another
// shape) makes the reader give up, and the text is parsed whole: the result is always what
// JSON.parse would give for these fields.
import type { MotionRecord } from './trips.ts';

export type MotionData = MotionRecord['data'];

/** 10^0 to 10^22: every one exactly a double. */
const POW10 = Array.from({ length: 23 }, (_, i) => Number(`1e${i}`));

/** Thrown (never out of this module) when the text is not as expected: it is parsed whole instead. */
const UNEXPECTED = new Error('unexpected text');

let text = '';
let at = 0;

function expect(code: number): void {
  if (text.charCodeAt(at) !== code) throw UNEXPECTED;
  at++;
}

/**
 * The JSON number at `at`, which moves past it. Up to 15 digits and no exponent, it is the
 * integer of its digits divided by a power of ten: both exact doubles, so the quotient is the
 * double nearest the decimal, as Number() gives (Clinger's fast path). Otherwise Number() reads it.
 */
function number(): number {
  const start = at;
  let c = text.charCodeAt(at);
  const negative = c === 45; // -
  if (negative) c = text.charCodeAt(++at);
  let mantissa = 0;
  let digits = 0;
  let scale = 0;
  while (c >= 48 && c <= 57) {
    mantissa = mantissa * 10 + (c - 48);
    digits++;
    c = text.charCodeAt(++at);
  }
  if (c === 46) { // .
    c = text.charCodeAt(++at);
    while (c >= 48 && c <= 57) {
      mantissa = mantissa * 10 + (c - 48);
      digits++;
      scale++;
      c = text.charCodeAt(++at);
    }
  }
  if (digits === 0) throw UNEXPECTED;
  if (c === 101 || c === 69 || digits > 15) { // e, E, or more digits than a double holds exactly
    while (c === 43 || c === 45 || c === 46 || c === 101 || c === 69 || (c >= 48 && c <= 57)) c = text.charCodeAt(++at);
    const value = Number(text.slice(start, at));
    if (Number.isNaN(value)) throw UNEXPECTED;
    return value;
  }
  const value = scale === 0 ? mantissa : mantissa / POW10[scale]!;
  return negative ? -value : value;
}

/** Past the string that begins at `at`. */
function skipString(): void {
  expect(34); // "
  for (;;) {
    const c = text.charCodeAt(at++);
    if (c === 34) return;
    if (c === 92) at++; // \ and the character it escapes
    else if (Number.isNaN(c)) throw UNEXPECTED; // the end of the text
  }
}

/** Past the value that begins at `at` (any JSON value: its end is the `,` or `}` after it at its depth). */
function skipValue(): void {
  let depth = 0;
  for (;;) {
    const c = text.charCodeAt(at);
    if (c === 34) {
      skipString();
      continue;
    }
    if (c === 123 || c === 91) depth++; // { [
    else if (c === 125 || c === 93 || c === 44) { // } ] ,
      if (depth === 0) return;
      if (c !== 44) depth--;
    } else if (Number.isNaN(c)) throw UNEXPECTED;
    at++;
  }
}

const has = (key: string) => text.startsWith(key, at);

function location(): { lat: number; lng: number } {
  expect(123); // {
  let lat: number | undefined;
  let lng: number | undefined;
  for (;;) {
    if (has('"lat":')) {
      at += 6;
      lat = number();
    } else if (has('"lng":')) {
      at += 6;
      lng = number();
    } else throw UNEXPECTED;
    const c = text.charCodeAt(at++);
    if (c === 125) break; // }
    if (c !== 44) throw UNEXPECTED;
  }
  if (lat === undefined || lng === undefined) throw UNEXPECTED;
  return { lat, lng };
}

function read(): MotionData {
  const data: MotionData = {};
  expect(123); // {
  if (text.charCodeAt(at) === 125) return data;
  for (;;) {
    if (has('"location":')) {
      at += 11;
      data.location = location();
    } else if (has('"speed":')) {
      at += 8;
      data.speed = number();
    } else if (has('"odometer":')) {
      at += 11;
      data.odometer = number();
    } else {
      skipString();
      expect(58); // :
      skipValue();
    }
    const c = text.charCodeAt(at++);
    if (c === 125) break; // }
    if (c !== 44) throw UNEXPECTED;
  }
  if (at !== text.length) throw UNEXPECTED;
  return data;
}

/**
 * The location, speed and odometer of text as the store writes it, as JSON.parse would give them;
 * `undefined` for text of any other shape.
 */
export function readMotionData(stored: string): MotionData | undefined {
  text = stored;
  at = 0;
  try {
    return read();
  } catch (error) {
    if (error !== UNEXPECTED) throw error;
    return undefined;
  } finally {
    text = '';
  }
}

/** The location, speed and odometer of a record's stored JSON text, as JSON.parse would give them. */
export function motionData(stored: string): MotionData {
  const read = readMotionData(stored);
  if (read !== undefined) return read;
  const { location, speed, odometer } = JSON.parse(stored) as MotionData;
  const data: MotionData = {};
  if (location !== undefined) data.location = location;
  if (speed !== undefined) data.speed = speed;
  if (odometer !== undefined) data.odometer = odometer;
  return data;
}
