// A record's stored JSON text read without parsing it whole. Both stores keep a record's `data` as
// JSON.stringify wrote it after validation: one flat object of the TelemetryData fields, in the
// order the client sent them, without whitespace; numbers as String() writes them, `location` as
// {lat, lng} in either order, `diagnostics` a flat object of its own. Reports over many records
// (trips of a month at 1 Hz, exports of millions) need a few fields or the fields' own text; JSON.parse
// built every object and number of every record, and that was most of what they cost.
//
// `findFields` finds where each field's value lies in the text, and reads the numbers on the way.
// Text of any other shape (a member the schema does not have, whitespace, a value of another type)
// is refused, and the caller parses it whole: what it reads is then always what JSON.parse would give.

/** The fields' slots in `Fields`: the top-level fields, then the location's two. */
export const SLOT = {
  location: 0, speed: 1, heading: 2, battery: 3, temperature: 4, odometer: 5, diagnostics: 6, ignition: 7, driverIdentifier: 8, lat: 9, lng: 10,
} as const;
const SLOTS = 11;

/**
 * Where each field is in the text: for slot s, its value from `spans[3s]` to `spans[3s + 1]`
 * (exclusive), and its member (from the key's opening quote) from `spans[3s + 2]`; -1 when absent.
 * A number's value is `numbers[s]` (as JSON.parse reads it).
 */
export interface Fields {
  spans: Int32Array;
  numbers: Float64Array;
}
export const newFields = (): Fields => ({ spans: new Int32Array(SLOTS * 3), numbers: new Float64Array(SLOTS) });
/** Whether the text `findFields` last read into `fields` has the field of `slot`. */
export const present = (fields: Fields, slot: number) => fields.spans[slot * 3] !== -1;
/** The field's value as `text` writes it (JSON.stringify's text: String() of a number). */
export const valueText = (fields: Fields, text: string, slot: number) => text.slice(fields.spans[slot * 3], fields.spans[slot * 3 + 1]);

/** The top-level keys, each with its quotes and colon, by slot. */
const KEYS = [
  '"location":', '"speed":', '"heading":', '"battery":', '"temperature":', '"odometer":', '"diagnostics":', '"ignition":', '"driverIdentifier":',
] as const;

/** Slot by the char code of a key's first letter; `d` is told apart by its second (diagnostics, driverIdentifier). */
const BY_FIRST_LETTER = new Int8Array(128).fill(-1);
for (const [slot, key] of KEYS.entries()) if (slot !== SLOT.driverIdentifier) BY_FIRST_LETTER[key.charCodeAt(1)] = slot;
const R = 'r'.charCodeAt(0);

/** Thrown (never out of this module) when the text is not as the store writes it. */
const UNEXPECTED = new Error('unexpected text');

let text = '';
let at = 0;

function expect(code: number): void {
  if (text.charCodeAt(at) !== code) throw UNEXPECTED;
  at++;
}

/** 10^0 to 10^22: every one exactly a double. */
const POW10 = Array.from({ length: 23 }, (_, i) => Number(`1e${i}`));

/**
 * The JSON number at `at`, which moves past it. Up to 15 digits and no exponent, it is the
 * integer of its digits divided by a power of ten: both exact doubles, so the quotient is the
 * double nearest the decimal, as JSON.parse gives (Clinger's fast path). Otherwise Number() reads it.
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

/** Past the `true` or `false` at `at`. */
function boolean(): void {
  if (text.startsWith('true', at)) at += 4;
  else if (text.startsWith('false', at)) at += 5;
  else throw UNEXPECTED;
}

/** Past the flat object at `at` (members of strings, numbers, booleans). */
function skipObject(): void {
  expect(123); // {
  if (text.charCodeAt(at) === 125) {
    at++;
    return;
  }
  for (;;) {
    skipString();
    expect(58); // :
    const c = text.charCodeAt(at);
    if (c === 34) skipString();
    else if (c === 116 || c === 102) boolean(); // t, f
    else number();
    const next = text.charCodeAt(at++);
    if (next === 125) return; // }
    if (next !== 44) throw UNEXPECTED; // ,
  }
}

/** The location object at `at`: its lat and lng. */
function readLocation({ spans, numbers }: Fields): void {
  expect(123); // {
  for (;;) {
    const member = at;
    const slot = text.startsWith('"lat":', at) ? SLOT.lat : text.startsWith('"lng":', at) ? SLOT.lng : -1;
    if (slot === -1 || spans[slot * 3] !== -1) throw UNEXPECTED;
    at += 6;
    spans[slot * 3] = at;
    numbers[slot] = number();
    spans[slot * 3 + 1] = at;
    spans[slot * 3 + 2] = member;
    const next = text.charCodeAt(at++);
    if (next === 125) break; // }
    if (next !== 44) throw UNEXPECTED;
  }
  if (spans[SLOT.lat * 3] === -1 || spans[SLOT.lng * 3] === -1) throw UNEXPECTED;
}

function read(fields: Fields): void {
  const { spans, numbers } = fields;
  for (let i = 0; i < SLOTS * 3; i++) spans[i] = -1;
  expect(123); // {
  if (text.charCodeAt(at) === 125) {
    at++;
  } else {
    for (;;) {
      const member = at;
      // The schema's keys differ in their first letter, but for diagnostics and driverIdentifier.
      let slot: number = BY_FIRST_LETTER[text.charCodeAt(at + 1) & 127]!;
      if (slot === SLOT.diagnostics && text.charCodeAt(at + 2) === R) slot = SLOT.driverIdentifier;
      if (slot === -1 || spans[slot * 3] !== -1) throw UNEXPECTED; // a member the schema has not, or twice
      const key = KEYS[slot]!;
      for (let k = 2; k < key.length; k++) if (text.charCodeAt(at + k) !== key.charCodeAt(k)) throw UNEXPECTED;
      at += key.length;
      spans[slot * 3] = at;
      if (slot === SLOT.location) readLocation(fields);
      else if (slot === SLOT.diagnostics) skipObject();
      else if (slot === SLOT.driverIdentifier) skipString();
      else if (slot === SLOT.ignition) boolean();
      else numbers[slot] = number();
      spans[slot * 3 + 1] = at;
      spans[slot * 3 + 2] = member;
      const next = text.charCodeAt(at++);
      if (next === 125) break; // }
      if (next !== 44) throw UNEXPECTED;
    }
  }
  if (at !== text.length) throw UNEXPECTED;
}

/** Fills `fields` with where each field of `stored` is; false when the text is not as the store writes it. */
export function findFields(stored: string, fields: Fields): boolean {
  text = stored;
  at = 0;
  try {
    read(fields);
    return true;
  } catch (error) {
    if (error !== UNEXPECTED) throw error;
    return false;
  } finally {
    text = '';
  }
}

