// Every event the service records is an instance of the OpenAPI document's `Event`: one schema per
// type, told apart by `type` (docs/API.md "Events"). A vehicle's life is driven through the API
// (registered, updated, activated, a geofence entered and left, an alert opened, acknowledged with a
// note and resolved, a trip started and ended, a status changed by hand, deleted), then the feed is
// read and each event checked against the document's schemas, with Ajv, as a receiver would.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { FleetEvent } from '@fleet/sdk';
import { EVENT_TYPES } from '../src/events/types.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { eventValidator } from './helpers/events.ts';

let ctx: TestApp;
before(async () => {
  ctx = await createTestApp();
});
after(() => ctx.close());

const T0 = Date.parse('2026-11-20T08:00:00.000Z');
const at = (seconds: number) => new Date(T0 + seconds * 1000).toISOString();

async function ok(method: 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await ctx.request(method, url, body === undefined ? {} : { body });
  assert.ok(res.statusCode < 300, `${method} ${url}: ${res.statusCode} ${res.body}`);
  return res.body === '' ? {} : res.json<Record<string, unknown>>();
}


test('every event recorded in a vehicle\'s life matches its type\'s schema in the OpenAPI document', async () => {
  await ok('POST', '/v2/fleet/vehicles', { vehicleId: 'van-1', type: 'van', name: 'Van one' });
  await ok('PATCH', '/v2/fleet/vehicles/van-1', { name: 'Van 1' });
  const geofence = await ok('POST', '/v2/geofences', { name: 'Depot', geometry: { type: 'Circle', coordinates: [13.4, 52.5], radius: 200 } });
  await ok('POST', '/v2/alert-rules', { name: 'Fast', condition: { kind: 'threshold', field: 'speed', op: '>', value: 80 } });
  await ok('POST', '/v2/alert-rules', { name: 'Left the depot', condition: { kind: 'geofence', geofenceId: geofence.id, when: 'outside' } });
  // Parked in the depot, then a drive of 20 minutes at 90 km/h (about 30 km), then a stop of 10 minutes.
  const records: Array<{ timestamp: string; data: Record<string, unknown> }> = [];
  records.push({ timestamp: at(0), data: { speed: 0, location: { lat: 52.5, lng: 13.4 } } });
  for (let s = 60; s <= 1260; s += 60) records.push({ timestamp: at(s), data: { speed: 90, location: { lat: 52.5 + (s / 60) * 0.0135, lng: 13.4 } } });
  for (let s = 1320; s <= 1920; s += 60) records.push({ timestamp: at(s), data: { speed: 0, location: { lat: 52.5 + 21 * 0.0135, lng: 13.4 } } });
  await ok('POST', '/v2/telemetry/van-1', { records });
  const alerts = (await ctx.request('GET', '/v2/alerts?limit=10')).json<{ alerts: Array<{ id: string; ruleName: string; status: string }> }>();
  const open = alerts.alerts.find((a) => a.ruleName === 'Left the depot' && a.status === 'open');
  assert.ok(open !== undefined, JSON.stringify(alerts));
  await ok('POST', `/v2/alerts/${open.id}/acknowledge`, { note: 'On a delivery' });
  await ok('POST', `/v2/alerts/${open.id}/resolve`, null);
  const driver = await ok('POST', '/v2/drivers', { name: 'Ada' });
  const assignment = await ok('POST', '/v2/driver-assignments', { driverId: driver.id, vehicleId: 'van-1' });
  await ok('POST', `/v2/driver-assignments/${String(assignment.id)}/end`, {});
  await ok('POST', '/v2/telemetry/van-1', { timestamp: at(1980), data: { speed: 0, driverIdentifier: 'NOBODY42' } });
  await ok('POST', '/v2/maintenance-schedules', { name: 'Oil', every: { km: 10000 } });
  await ok('POST', '/v2/fleet/vehicles/van-1/service-records', { performedAt: at(1990), notes: 'Wipers' });
  const reportSchedule = await ok('POST', '/v2/report-schedules', { name: 'Daily', groupBy: 'vehicle', period: 'day', timezone: 'Europe/Berlin', format: 'csv' });
  await ok('POST', `/v2/report-schedules/${String(reportSchedule.id)}/run`);
  await ok('PUT', '/v2/fleet/vehicles/van-1/status', { status: 'maintenance', reason: 'Brakes' });
  await ok('DELETE', '/v2/fleet/vehicles/van-1');

  const feed = (await ctx.request('GET', '/v2/events?limit=1000')).json<{ events: FleetEvent[] }>();
  const seen = new Set(feed.events.map((e) => e.type));
  // webhook.test is never in the feed; every other type is, but for commands' (test/commands.test.ts checks theirs with devices)
  // and maintenance's announcements (test/maintenance.test.ts checks theirs, made by its check).
  const elsewhere = (type: string) => type.startsWith('command.') || type === 'maintenance.due_soon' || type === 'maintenance.overdue';
  assert.deepEqual(EVENT_TYPES.filter((type) => type !== 'webhook.test' && !elsewhere(type) && !seen.has(type)), [], `types seen: ${[...seen].join(', ')}`);
  const validate = await eventValidator(ctx);
  for (const event of feed.events) assert.ok(validate(event), `${JSON.stringify(event)}\n${JSON.stringify(validate.errors)}`);

  // The SDK's type narrows `data` by `type` (this compiles only if it does).
  const described = feed.events.map((event) => {
    if (event.type === 'vehicle.status_changed') return `${event.vehicleId}: ${event.data.from} → ${event.data.to}`;
    if (event.type === 'geofence.entered') return `entered ${event.data.name}`;
    if (event.type === 'alert.acknowledged') return `${event.data.ruleName}: ${event.data.note}`;
    if (event.type === 'trip.ended') return `${event.data.distanceMeters} m`;
    return event.type;
  });
  assert.ok(described.includes('entered Depot'), described.join('\n'));
  assert.ok(described.includes('Left the depot: On a delivery'), described.join('\n'));

  // A receiver telling events apart by `type` needs each one to match exactly one variant: an event
  // whose data is another type's is refused.
  const statusChange = feed.events.find((e) => e.type === 'vehicle.status_changed');
  assert.equal(validate({ ...statusChange, type: 'geofence.entered' }), false);
  assert.equal(validate({ ...statusChange, type: 'vehicle.renamed' }), false, 'an unknown type is no variant of the document');
});

test('webhook.test has no vehicle and no data, and matches its schema', async () => {
  const validate = await eventValidator(ctx);
  assert.ok(validate({ id: 'evt_1', type: 'webhook.test', occurredAt: '2026-11-20T08:00:00.000Z', data: {} }), JSON.stringify(validate.errors));
  assert.equal(validate({ id: 'evt_1', type: 'webhook.test', occurredAt: '2026-11-20T08:00:00.000Z', vehicleId: 'van-1', data: {} }), false);
});
