// The OsmAnd decoder alone: parameters and Traccar Client 9 JSON to records, with the unit
// conversions of docs/API.md "Devices and protocols".
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isAppError } from '../src/errors.ts';
import { decodeJson, decodeParameters, parseTime } from '../src/protocols/osmand/decode.ts';

function refused(fn: () => unknown): Array<{ path: string; message: string }> {
  try {
    fn();
  } catch (error) {
    assert.ok(isAppError(error) && error.code === 'validation-failed', String(error));
    return error.errors!.map(({ path, message }) => ({ path, message }));
  }
  assert.fail('expected a validation failure');
}

describe('parameters (query or form)', () => {
  test('OsmAnd\'s parameters: knots to km/h, altitude and accuracy to diagnostics, other scalars too', () => {
    const report = decodeParameters({
      id: 'phone-1', lat: '52.52', lon: '13.405', timestamp: '1763800200', speed: '10', bearing: '87.5',
      altitude: '34.2', accuracy: '5', batt: '76', charge: 'true', hdop: '0.9', driverUniqueId: 'D-7',
    }, 'query');
    assert.deepEqual(report, {
      identifier: 'phone-1',
      records: [{
        timestamp: '2025-11-22T08:30:00.000Z',
        data: {
          location: { lat: 52.52, lng: 13.405 }, speed: 18.52, heading: 87.5, battery: 76,
          diagnostics: { altitude: 34.2, accuracy: 5, charge: true, hdop: 0.9, driverUniqueId: 'D-7' },
        },
      }],
    });
  });

  test('ignition and driverUniqueId are fields when of their form, else diagnostics', () => {
    const fields = decodeParameters({ id: 'phone-1', ignition: '1', driverUniqueId: '01A2B3C4D5E6F708' }, 'query');
    assert.deepEqual(fields.records[0]!.data, { ignition: true, driverIdentifier: '01A2B3C4D5E6F708' });
    assert.deepEqual(decodeParameters({ id: 'phone-1', ignition: 'false' }, 'query').records[0]!.data, { ignition: false });
    const other = decodeParameters({ id: 'phone-1', ignition: 'on', driverUniqueId: 'D-7' }, 'query');
    assert.deepEqual(other.records[0]!.data, { diagnostics: { ignition: 'on', driverUniqueId: 'D-7' } });
  });

  test('negative speed, heading and battery mean unknown; deviceid names the device too; no timestamp means none given', () => {
    const report = decodeParameters({ deviceid: 'phone-2', lat: '-33.9', lon: '151.2', speed: '-1', heading: '-1', batt: '-1' }, 'body');
    assert.deepEqual(report, { identifier: 'phone-2', records: [{ data: { location: { lat: -33.9, lng: 151.2 } } }] });
  });

  test('timestamps: Unix seconds (with a fraction), Unix milliseconds, ISO 8601', () => {
    assert.equal(parseTime('1763800200'), '2025-11-22T08:30:00.000Z');
    assert.equal(parseTime('1763800200.25'), '2025-11-22T08:30:00.250Z');
    assert.equal(parseTime('1763800200123'), '2025-11-22T08:30:00.123Z');
    assert.equal(parseTime('2025-11-22T08:30:00Z'), '2025-11-22T08:30:00.000Z');
    assert.equal(parseTime('2025-11-22 09:30:00+01:00'), '2025-11-22T08:30:00.000Z');
    for (const bad of ['yesterday', '', '-5', '1e400', '99999999999999999999']) assert.equal(parseTime(bad), undefined, bad);
  });

  test('an ISO 8601 time is held to the HTTP API\'s rules: a real calendar date, with its zone', () => {
    assert.equal(parseTime('2028-02-29T00:00:00Z'), '2028-02-29T00:00:00.000Z', 'a leap day of a leap year');
    for (const bad of ['2026-02-29T00:00:00Z', '2026-04-31T12:00:00Z', '2026-02-28T12:00:00', '2026-02-28 12:00:00', '2026-02-28T12:00Z', '2026-02-28T24:00:00Z']) {
      assert.equal(parseTime(bad), undefined, bad);
    }
  });

  test('each problem is named by parameter, and nothing is decoded', () => {
    assert.deepEqual(refused(() => decodeParameters({ lat: 'north', lon: '200', speed: 'fast', timestamp: 'soon' }, 'query')), [
      { path: '/id', message: 'is required (id or deviceid)' },
      { path: '/lat', message: 'must be a finite number' },
      { path: '/lon', message: 'must be from -180 to 180' },
      { path: '/speed', message: 'must be a finite number' },
      { path: '/timestamp', message: 'must be Unix seconds, Unix milliseconds or ISO 8601' },
    ]);
    assert.deepEqual(refused(() => decodeParameters({ id: 'a', lat: '1' }, 'query')), [{ path: '/lon', message: 'is required with the other coordinate' }]);
    assert.deepEqual(refused(() => decodeParameters({ id: ['a', 'b'] }, 'query')), [
      { path: '/id', message: 'is given more than once' }, { path: '/id', message: 'is required (id or deviceid)' },
    ]);
    assert.deepEqual(refused(() => decodeParameters({ id: 'a', deviceid: 'b', lat: 'NaN', lon: 'Infinity' }, 'query')).map((e) => e.path), ['/deviceid', '/lat', '/lon']);
  });
});

describe('Traccar Client 9 JSON', () => {
  const location = {
    timestamp: '2025-11-22T08:30:00.000Z',
    coords: { latitude: 52.52, longitude: 13.405, speed: 10, heading: 90, altitude: 34, accuracy: 4.5, altitude_accuracy: 3 },
    battery: { level: 0.76, is_charging: false },
    odometer: 12345.6,
    is_moving: true,
    event: 'motionchange',
    activity: { type: 'in_vehicle', confidence: 100 },
    extras: { anything: 1 },
  };

  test('m/s to km/h, level 0..1 to percent, odometer m to km; nested activity and extras ignored', () => {
    const report = decodeJson({ device_id: 'phone-9', location });
    assert.equal(report.identifier, 'phone-9');
    assert.equal(report.records.length, 1);
    const { timestamp, data } = report.records[0]!;
    assert.equal(timestamp, '2025-11-22T08:30:00.000Z');
    assert.deepEqual(data.location, { lat: 52.52, lng: 13.405 });
    assert.equal(data.speed, 36);
    assert.equal(data.heading, 90);
    assert.equal(data.battery, 76);
    assert.ok(Math.abs(data.odometer! - 12.3456) < 1e-9);
    assert.deepEqual(data.diagnostics, { altitude: 34, accuracy: 4.5, altitude_accuracy: 3, is_charging: false, is_moving: true, event: 'motionchange' });
  });

  test('negative speed, heading and level are unknown; an array of locations is several records', () => {
    const report = decodeJson({
      device_id: 'phone-9',
      location: [
        { timestamp: 1763800200000, coords: { latitude: 1, longitude: 2, speed: -1, heading: -1 }, battery: { level: -1 } },
        { coords: { latitude: 3, longitude: 4 } },
      ],
    });
    assert.deepEqual(report.records, [
      { timestamp: '2025-11-22T08:30:00.000Z', data: { location: { lat: 1, lng: 2 } } },
      { data: { location: { lat: 3, lng: 4 } } },
    ]);
  });

  test('strings where numbers belong, a missing device_id or a bad shape: 400 naming each', () => {
    assert.deepEqual(refused(() => decodeJson({ location: { coords: { latitude: '52', longitude: 13, speed: 'x' } } })).map((e) => e.path), [
      '/device_id', '/location/coords/latitude', '/location/coords/speed',
    ]);
    assert.deepEqual(refused(() => decodeJson([1, 2])).map((e) => e.path), ['']);
    assert.deepEqual(refused(() => decodeJson({ device_id: 'a', location: 'here' })).map((e) => e.path), ['/location']);
    assert.deepEqual(refused(() => decodeJson({ device_id: 'a', location: [] })).map((e) => e.path), ['/location']);
    assert.deepEqual(refused(() => decodeJson({ device_id: 'a', location: { timestamp: 'later' } })).map((e) => e.path), ['/location/timestamp']);
  });
});
