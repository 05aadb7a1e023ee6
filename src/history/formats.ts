// Export formats: each writes a page of records as one piece of text, so an export of any size
// is a stream of pages (docs/API.md "History: trips, stops, aggregates, exports"). A record comes
// as its stored JSON text, and each format takes what it writes from that text's own characters
// (telemetry/stored-text.ts): an export of a million records parses none of them, makes no
// object per record, and so leaves the heap much as it found it. Text the reader refuses is
// parsed and written the same way, from the parsed record.
import { iso } from '../clock.ts';
import type { TelemetryData } from '../telemetry/schema.ts';
import { type Fields, SLOT, findFields, newFields, present, valueText } from '../telemetry/stored-text.ts';
import type { ScannedRecord, StoredRecord, WrittenFormat } from '../telemetry/store.ts';
import type { ExportFormat } from './schema.ts';

/** A record as an export reads it: its `data` as stored, JSON text. */
export type StoredText = ScannedRecord<string>;

export interface ExportWriter {
  begin(): string;
  page(records: readonly StoredText[]): string;
  end(): string;
}

const fields: Fields = newFields();
const { spans, numbers } = fields;
const has = (slot: number) => present(fields, slot);
const textOf = (text: string, slot: number) => valueText(fields, text, slot);
const parsed = (record: StoredText): StoredRecord => ({ vehicleId: record.vehicleId, timestamp: record.timestamp, data: JSON.parse(record.data) as TelemetryData });

export interface ExportFormatSpec {
  contentType: string;
  extension: string;
  writer(vehicleId: string): ExportWriter;
  /**
   * A store may write this format's records itself (TelemetryStore's `scanWritten`): what goes
   * between two of its pieces, which come between the writer's `begin` and `end`.
   */
  written?: { format: WrittenFormat; separator: string };
}

const CSV_HEADER = 'timestamp,lat,lng,speed,heading,battery,temperature,odometer,diagnostics\r\n';
const cell = (value: number | undefined) => (value === undefined ? '' : String(value));

/**
 * RFC 4180: CRLF line ends. Only `diagnostics` (JSON text) can hold a quote, comma or line break,
 * so it is always quoted, its quotes doubled; numbers and timestamps never need it.
 */
function csvLine(record: StoredRecord): string {
  const d = record.data;
  const diagnostics = d.diagnostics === undefined ? '' : `"${JSON.stringify(d.diagnostics).replaceAll('"', '""')}"`;
  return `${iso(record.timestamp)},${cell(d.location?.lat)},${cell(d.location?.lng)},${cell(d.speed)},${cell(d.heading)},` +
    `${cell(d.battery)},${cell(d.temperature)},${cell(d.odometer)},${diagnostics}\r\n`;
}

/** `csvLine` from the stored text's characters. */
function csvLineOf(record: StoredText): string {
  const text = record.data;
  if (!findFields(text, fields)) return csvLine(parsed(record));
  const c = (slot: number) => (has(slot) ? textOf(text, slot) : '');
  const diagnostics = has(SLOT.diagnostics) ? `"${textOf(text, SLOT.diagnostics).replaceAll('"', '""')}"` : '';
  return `${iso(record.timestamp)},${c(SLOT.lat)},${c(SLOT.lng)},${c(SLOT.speed)},${c(SLOT.heading)},` +
    `${c(SLOT.battery)},${c(SLOT.temperature)},${c(SLOT.odometer)},${diagnostics}\r\n`;
}

/** RFC 7946: one Point feature per located record; the other fields are its properties. */
function geojsonFeature(record: StoredRecord): string | undefined {
  const { location, ...rest } = record.data;
  if (location === undefined) return undefined;
  return JSON.stringify({
    type: 'Feature',
    geometry: { type: 'Point', coordinates: [location.lng, location.lat] },
    properties: { timestamp: iso(record.timestamp), ...rest },
  });
}

/**
 * `geojsonFeature` from the stored text's characters: the properties are the text's other
 * members, in their order, after the timestamp.
 */
function geojsonFeatureOf(record: StoredText): string | undefined {
  const text = record.data;
  if (!findFields(text, fields)) return geojsonFeature(parsed(record));
  if (!has(SLOT.location)) return undefined;
  // The members before the location's and after it (and the comma between them and it).
  const member = spans[SLOT.location * 3 + 2]!;
  const end = spans[SLOT.location * 3 + 1]!;
  const before = text.slice(1, Math.max(1, member - 1));
  const after = text.slice(end + 1, -1);
  const rest = before === '' ? after : after === '' ? before : `${before},${after}`;
  return `{"type":"Feature","geometry":{"type":"Point","coordinates":[${textOf(text, SLOT.lng)},${textOf(text, SLOT.lat)}]},` +
    `"properties":{"timestamp":"${iso(record.timestamp)}"${rest === '' ? '' : `,${rest}`}}}`;
}

const escapeXml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);

/** xsd:decimal has no exponent, which String() writes below 1e-6. */
const decimal = (value: number) => (Math.abs(value) < 1e-6 ? value.toFixed(12).replace(/\.?0+$/, '') : String(value));

const GPX_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n' +
  '<gpx version="1.1" creator="Fleet" xmlns="http://www.topografix.com/GPX/1/1" ' +
  'xmlns:gpxtpx="http://www.garmin.com/xmlschemas/TrackPointExtension/v2" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ' +
  'xsi:schemaLocation="http://www.topografix.com/GPX/1/1 http://www.topografix.com/GPX/1/1/gpx.xsd ' +
  'http://www.garmin.com/xmlschemas/TrackPointExtension/v2 http://www8.garmin.com/xmlschemas/TrackPointExtensionv2.xsd">\n';

/**
 * A track point: GPX 1.1 has no speed of its own, so speed (m/s) and course go into Garmin's
 * TrackPointExtension, the extension GPX readers know (in the order its schema gives).
 */
function gpxPoint(timestamp: number, location: { lat: number; lng: number } | undefined, speed: number | undefined, heading: number | undefined): string | undefined {
  if (location === undefined) return undefined;
  const extension = speed === undefined && heading === undefined ? '' :
    '<extensions><gpxtpx:TrackPointExtension>' +
    (speed === undefined ? '' : `<gpxtpx:speed>${speed / 3.6}</gpxtpx:speed>`) +
    (heading === undefined ? '' : `<gpxtpx:course>${heading}</gpxtpx:course>`) +
    '</gpxtpx:TrackPointExtension></extensions>';
  return `<trkpt lat="${decimal(location.lat)}" lon="${decimal(location.lng)}"><time>${iso(timestamp)}</time>${extension}</trkpt>\n`;
}

/** `gpxPoint` of the numbers read from the stored text. */
function gpxPointOf(record: StoredText): string | undefined {
  if (!findFields(record.data, fields)) {
    const { location, speed, heading } = JSON.parse(record.data) as TelemetryData;
    return gpxPoint(record.timestamp, location, speed, heading);
  }
  if (!has(SLOT.location)) return undefined;
  const number = (slot: number) => (has(slot) ? numbers[slot] : undefined);
  return gpxPoint(record.timestamp, { lat: numbers[SLOT.lat]!, lng: numbers[SLOT.lng]! }, number(SLOT.speed), number(SLOT.heading));
}

export const FORMATS: Record<ExportFormat, ExportFormatSpec> = {
  csv: {
    contentType: 'text/csv; charset=utf-8; header=present',
    extension: 'csv',
    written: { format: 'csv', separator: '' },
    writer: () => ({
      begin: () => CSV_HEADER,
      page: (records) => {
        let text = '';
        for (const record of records) text += csvLineOf(record);
        return text;
      },
      end: () => '',
    }),
  },
  geojson: {
    contentType: 'application/geo+json',
    extension: 'geojson',
    written: { format: 'geojson', separator: ',\n' },
    writer: () => {
      let separator = '';
      return {
        begin: () => '{"type":"FeatureCollection","features":[\n',
        page: (records) => {
          let text = '';
          for (const record of records) {
            const feature = geojsonFeatureOf(record);
            if (feature === undefined) continue;
            text += separator + feature;
            separator = ',\n';
          }
          return text;
        },
        end: () => '\n]}\n',
      };
    },
  },
  gpx: {
    contentType: 'application/gpx+xml',
    extension: 'gpx',
    writer: (vehicleId) => ({
      begin: () => `${GPX_HEAD}<trk><name>${escapeXml(vehicleId)}</name><trkseg>\n`,
      page: (records) => {
        let text = '';
        for (const record of records) text += gpxPointOf(record) ?? '';
        return text;
      },
      end: () => '</trkseg></trk>\n</gpx>\n',
    }),
  },
};
