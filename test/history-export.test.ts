// Exports (docs/API.md "History: trips, stops, aggregates, exports"): each format read back by a
// third-party reader, and the stream's flow on a real socket, on both stores: a client that stops
// reading stops the reads (backpressure), and one that goes away ends the scan.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { check as checkGeoJson } from '@placemarkio/check-geojson';
import { gpx as gpxToGeoJson } from '@tmcw/togeojson';
import { DOMParser } from '@xmldom/xmldom';
import { parse as parseCsv } from 'csv-parse/sync';
import { FORMATS } from '../src/history/formats.ts';
import { SCANS } from '../src/history/service.ts';
import { mergeLatest } from '../src/telemetry/latest.ts';
import type { ScanOptions, StoredRecord, TelemetryStore, TimeRange } from '../src/telemetry/store.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { START, at } from './helpers/history.ts';
import { skipUnlessPostgres } from './helpers/postgres.ts';

const RANGE = { from: at(0), to: at(86_400) };

/** Records of every shape: located or not, with text that CSV and XML must escape. */
const RECORDS: StoredRecord['data'][] = [
  { location: { lat: 52.52, lng: 13.405 }, speed: 36, heading: 87.5, battery: 76.5, temperature: -3.25, odometer: 12_000.125 },
  { battery: 75, diagnostics: { dtc: 'P0420', note: 'a "quoted", comma\nnew line', ok: true, n: 1.5 } },
  { location: { lat: 0.0000001, lng: -0.0000002 }, diagnostics: { 'x.y': 'ü 🚐 <&>' } },
  { location: { lat: -33.8688, lng: 151.2093 } },
  { speed: 0, diagnostics: {} },
  { location: { lat: 52.53, lng: 13.41 }, speed: 72, odometer: 12_001 },
];
// More than a page of located records, so pieces of the stream join across pages.
const MANY = Array.from({ length: SCANS.export.pageSize + 500 }, (_, i) => ({ location: { lat: 50 + i / 1e4, lng: 8 }, speed: i % 100 }));

function suite(backend: 'sqlite' | 'postgres') {
  let ctx: TestApp;
  const commit = async (vehicleId: string, list: StoredRecord['data'][], step = 1000) => {
    for (let i = 0; i < list.length; i += 1000) {
      const records = list.slice(i, i + 1000).map((data, j) => ({ vehicleId, timestamp: START + (i + j) * step, data }));
      const [outcome] = await ctx.stores.telemetry.commit([{ organizationId: ctx.organizationId, at: START, records }], mergeLatest);
      assert.ok(outcome?.ok);
    }
  };
  before(async () => {
    ctx = await createTestApp({ backend });
    for (const id of ['shapes', 'many', 'big']) await ctx.registerVehicle(id);
    await commit('shapes', RECORDS);
    await commit('many', MANY);
  });
  after(async () => {
    await ctx?.close();
  });

  const exportOf = async (vehicleId: string, format: string) => {
    const res = await ctx.request('GET', `/v2/telemetry/${vehicleId}/export`, { query: { ...RANGE, format } });
    assert.equal(res.statusCode, 200, res.body.slice(0, 300));
    assert.match(String(res.headers['content-disposition']), new RegExp(`^attachment; filename="${vehicleId}_\\d{8}T\\d{6}Z_\\d{8}T\\d{6}Z\\.${format}"$`));
    return res;
  };

  test('CSV: RFC 4180 with CRLF and a header row, read back by csv-parse', async () => {
    const res = await exportOf('shapes', 'csv');
    assert.match(String(res.headers['content-type']), /^text\/csv/);
    assert.ok(res.body.endsWith('\r\n') && !/[^\r]\n/.test(res.body), 'every line ends with CRLF');
    const rows = parseCsv<Record<string, string>>(res.body, { columns: true, record_delimiter: '\r\n' });
    assert.equal(res.body.slice(0, res.body.indexOf('\r\n')), 'timestamp,lat,lng,speed,heading,battery,temperature,odometer,diagnostics');
    const cell = (v: number | undefined) => (v === undefined ? '' : String(v));
    assert.deepEqual(rows, RECORDS.map((d, i) => ({
      timestamp: at(i), lat: cell(d.location?.lat), lng: cell(d.location?.lng), speed: cell(d.speed), heading: cell(d.heading),
      battery: cell(d.battery), temperature: cell(d.temperature), odometer: cell(d.odometer),
      diagnostics: d.diagnostics === undefined ? '' : JSON.stringify(d.diagnostics),
    })));
    assert.deepEqual(JSON.parse(rows[1]!.diagnostics), RECORDS[1]!.diagnostics);
    const many = parseCsv<Record<string, string>>((await exportOf('many', 'csv')).body, { columns: true });
    assert.equal(many.length, MANY.length);
  });

  test('CSV and GeoJSON written by the store itself: the bytes the writers write, for numbers of every form and times before 1970', async (t) => {
    const store = ctx.stores.telemetry;
    if (store.scanWritten === undefined) return t.skip('this store leaves the exports to the writers');
    const org = ctx.organizationId;
    const odd: StoredRecord['data'][] = [
      ...RECORDS,
      { location: { lat: 1e-7, lng: -179.99999999999997 }, speed: 0.1 + 0.2, odometer: 2 ** 53 + 2, temperature: -0 },
      { odometer: 1e21, battery: 100, heading: 359.99999999999994, diagnostics: { a: 'tab\t "q" \\ \u0001 \u2028 \ud800', b: 1e-7, c: false } },
      { diagnostics: { z: 'only diagnostics' }, location: { lng: 2.5, lat: -1e-9 } },
    ];
    // A few records go to the recent table, more straight to the clustered one: both are read.
    const records = [...odd, ...odd, ...odd].map((data, i) => ({ vehicleId: 'odd', timestamp: -2_001 + i * 997, data }));
    await ctx.registerVehicle('odd');
    for (const part of [records.slice(0, 5), records.slice(5)]) {
      const [outcome] = await store.commit([{ organizationId: org, at: START, records: part }], mergeLatest);
      assert.ok(outcome?.ok);
    }
    const range = { from: -10_000, to: 100_000 };
    for (const format of ['csv', 'geojson'] as const) {
      const writer = FORMATS[format].writer('odd');
      let expected = '';
      for await (const page of store.scan(org, 'odd', range, { pageSize: 4, decode: (text) => text })) expected += writer.page(page);
      const located = records.filter((r) => r.data.location !== undefined).length;
      assert.equal(expected.split(format === 'csv' ? '\r\n' : ',\n').length, format === 'csv' ? records.length + 1 : located);
      for (const pageSize of [1, 4, 1000]) {
        const pieces: string[] = [];
        for await (const piece of store.scanWritten(format, org, 'odd', range, pageSize)!) pieces.push(piece);
        if (format === 'csv') assert.equal(pieces.length, Math.ceil(records.length / pageSize));
        assert.equal(pieces.join(FORMATS[format].written!.separator), expected, `${format}, pages of ${pageSize}`);
      }
      // Times SQLite cannot write as JavaScript does: the export writes the records itself.
      assert.equal(store.scanWritten(format, org, 'odd', { from: -62_167_219_200_001, to: 0 }, 10), undefined);
      const res = await ctx.request('GET', '/v2/telemetry/odd/export', { query: { from: '1969-12-31T23:59:50Z', to: '1970-01-02T00:00:00Z', format } });
      assert.equal(res.body, `${writer.begin()}${expected}${writer.end()}`);
    }
  });

  test('GeoJSON: a FeatureCollection of one Point per located record, valid for check-geojson', async () => {
    const res = await exportOf('shapes', 'geojson');
    assert.equal(res.headers['content-type'], 'application/geo+json');
    const collection = checkGeoJson(res.body) as unknown as { features: Array<{ geometry: { coordinates: number[] }; properties: Record<string, unknown> }> };
    const located = RECORDS.map((d, i) => [d, i] as const).filter(([d]) => d.location !== undefined);
    assert.deepEqual(collection.features.map((f) => f.geometry.coordinates), located.map(([d]) => [d.location!.lng, d.location!.lat]));
    assert.deepEqual(collection.features.map((f) => f.properties), located.map(([{ location: _, ...rest }, i]) => ({ timestamp: at(i), ...rest })));
    const many = checkGeoJson((await exportOf('many', 'geojson')).body) as unknown as { features: unknown[] };
    assert.equal(many.features.length, MANY.length);
  });

  test('GPX: GPX 1.1, one track, time and speed in m/s, read back by togeojson', async () => {
    const res = await exportOf('shapes', 'gpx');
    assert.equal(res.headers['content-type'], 'application/gpx+xml');
    const doc = new DOMParser().parseFromString(res.body, 'text/xml');
    assert.equal(doc.documentElement?.getAttribute('version'), '1.1');
    assert.equal(doc.documentElement?.namespaceURI, 'http://www.topografix.com/GPX/1/1');
    const { features } = gpxToGeoJson(doc);
    assert.equal(features.length, 1, 'one track');
    const [track] = features;
    const located = RECORDS.map((d, i) => [d, i] as const).filter(([d]) => d.location !== undefined);
    assert.deepEqual((track!.geometry as { coordinates: number[][] }).coordinates, located.map(([d]) => [d.location!.lng, d.location!.lat]));
    const properties = track!.properties as { name: string; coordinateProperties: { times: string[]; speeds: Array<number | null>; courses: Array<number | null> } };
    assert.equal(properties.name, 'shapes');
    assert.deepEqual(properties.coordinateProperties.times, located.map(([, i]) => at(i)));
    assert.deepEqual(properties.coordinateProperties.speeds, located.map(([d]) => (d.speed === undefined ? null : d.speed / 3.6)));
    assert.deepEqual(properties.coordinateProperties.courses, located.map(([d]) => d.heading ?? null));
    const many = gpxToGeoJson(new DOMParser().parseFromString((await exportOf('many', 'gpx')).body, 'text/xml'));
    assert.equal((many.features[0]!.geometry as { coordinates: unknown[] }).coordinates.length, MANY.length);
  });

  test('a client that stops reading stops the reads; one that goes away ends the scan', async () => {
    // About 2.5 kB per CSV line: many times what socket buffers hold.
    const diagnostics = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`k${i}`, 'x'.repeat(256)]));
    const total = SCANS.export.pageSize * 24; // more than one of the larger reads PostgreSQL makes
    await commit('big', Array.from({ length: total }, () => ({ speed: 1, diagnostics })), 1);
    // Pages are counted as the export takes them from the store's scan (which reads the database
    // only when a page it does not hold yet is taken), and the end of the scan: `scanWritten` for
    // a store that writes the CSV itself, else `scan`.
    const store = ctx.stores.telemetry;
    const scan = store.scan.bind(store);
    const scanWritten = store.scanWritten?.bind(store);
    let queries = 0;
    let ended = 0;
    async function* counted<T>(pages: AsyncGenerator<T, void, undefined>) {
      try {
        for await (const page of pages) {
          queries++;
          yield page;
        }
      } finally {
        ended++;
      }
    }
    store.scan = <D>(...args: [string, string, TimeRange, ScanOptions<D>]) => counted(scan<D>(...args));
    if (scanWritten !== undefined) {
      store.scanWritten = (...args: Parameters<NonNullable<TelemetryStore['scanWritten']>>) => {
        const pages = scanWritten(...args);
        return pages === undefined ? undefined : counted(pages);
      };
    }
    let req: http.ClientRequest | undefined;
    try {
      await ctx.app.listen({ host: '127.0.0.1', port: 0 });
      const { port } = ctx.app.server.address() as AddressInfo;
      const path = `/v2/telemetry/big/export?${new URLSearchParams({ ...RANGE, format: 'csv' }).toString()}`;
      const headers = { authorization: `Bearer ${ctx.adminKey}` };
      const open = async () => {
        req = http.get({ host: '127.0.0.1', port, path, headers });
        const res = await new Promise<http.IncomingMessage>((resolve) => req!.on('response', resolve));
        assert.equal(res.statusCode, 200);
        return res;
      };
      // A client reading it all: the queries the whole range takes.
      let bytes = 0;
      for await (const chunk of await open()) bytes += (chunk as Buffer).length;
      assert.ok(bytes > total * 2000, `${bytes} bytes`);
      const whole = queries;
      assert.equal(ended, 1);
      queries = 0;

      const res = await open();
      await new Promise((resolve) => res.once('data', resolve));
      res.pause();
      const settle = () => new Promise((resolve) => setTimeout(resolve, 300));
      // The reads go on until the socket's buffers are full, however long a busy machine takes to
      // fill them, then stop: wait for the count to hold still, and for it to be short of the whole.
      let paused = -1;
      for (let i = 0; i < 40 && queries !== paused; i++) {
        paused = queries;
        await settle();
      }
      assert.equal(queries, paused, 'the reads stopped while the client reads nothing');
      assert.ok(paused > 0 && paused < whole - 1, `${paused} of the ${whole} pages read for a client that stopped reading`);
      assert.equal(ended, 1);
      req!.destroy();
      for (let i = 0; i < 50 && ended === 1; i++) await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(ended, 2, 'the scan ended when the client went away');
      await settle();
      assert.ok(queries <= paused + 1, `${queries} pages read after the client went away (${paused} before)`);
    } finally {
      req?.destroy(); // a failed check must not leave a paused response holding the server open
      store.scan = scan;
      store.scanWritten = scanWritten;
    }
  });
}

describe('exports on SQLite', () => suite('sqlite'));
describe('exports on PostgreSQL', { skip: await skipUnlessPostgres() }, () => suite('postgres'));
