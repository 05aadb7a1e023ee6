// The event feed and vehicle events through the HTTP stack (docs/API.md "Events"), and the
// vehicle merge patch that records `vehicle.updated`.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestApp } from './helpers/app.ts';

let ctx: TestApp;
before(async () => {
  ctx = await createTestApp();
});
after(() => ctx.close());

interface Envelope { id: string; type: string; occurredAt: string; vehicleId?: string; data: Record<string, unknown> }

async function feed(query: Record<string, string> = {}, key?: string): Promise<{ events: Envelope[]; next: string }> {
  const res = await ctx.request('GET', '/v2/events', { query, key });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

/** Follows the feed from `after` to its end, `limit` at a time. */
async function follow(after: string | undefined, limit: number, extra: Record<string, string> = {}) {
  const events: Envelope[] = [];
  let cursor = after;
  for (;;) {
    const page = await feed({ limit: String(limit), ...extra, ...(cursor === undefined ? {} : { after: cursor }) });
    assert.equal(typeof page.next, 'string');
    cursor = page.next;
    if (page.events.length === 0) return { events, next: cursor };
    events.push(...page.events);
  }
}

describe('event feed', () => {
  test('a vehicle\'s life in order: registered, activated by telemetry, changed, updated, deleted', async () => {
    const start = (await follow(undefined, 1000)).next;
    await ctx.registerVehicle('ev-1', { name: 'First' });
    const telemetry = await ctx.request('POST', '/v2/telemetry/ev-1', { body: { data: { speed: 12 } } });
    assert.equal(telemetry.statusCode, 202);
    assert.equal((await ctx.request('PUT', '/v2/fleet/vehicles/ev-1/status', { body: { status: 'maintenance', reason: 'brakes' } })).statusCode, 200);
    assert.equal((await ctx.request('PATCH', '/v2/fleet/vehicles/ev-1', { body: { name: 'Renamed' } })).statusCode, 200);
    assert.equal((await ctx.request('DELETE', '/v2/fleet/vehicles/ev-1')).statusCode, 204);

    const { events } = await follow(start, 2);
    assert.deepEqual(events.map((e) => e.type), [
      'vehicle.registered', 'vehicle.status_changed', 'vehicle.status_changed', 'vehicle.updated', 'vehicle.deleted',
    ]);
    assert.ok(events.every((e) => e.vehicleId === 'ev-1' && /^evt_[A-Za-z0-9]+$/.test(e.id)));
    assert.equal(new Set(events.map((e) => e.id)).size, events.length);
    assert.equal(events[0]!.data.name, 'First');
    assert.deepEqual(events[1]!.data, { from: 'registered', to: 'active', reason: 'first telemetry', by: 'system' });
    assert.deepEqual({ ...events[2]!.data, by: undefined }, { from: 'active', to: 'maintenance', reason: 'brakes', by: undefined });
    assert.match(String(events[2]!.data.by), /^key_/);
    assert.equal(events[3]!.data.name, 'Renamed');
    assert.deepEqual(events[4]!.data, {});
  });

  test('text outside ASCII comes through as it was written, and Content-Length counts its bytes', async () => {
    const start = (await follow(undefined, 1000)).next;
    await ctx.registerVehicle('ev-text', { name: 'Zürich \u2603 \ud83d\ude9a "quoted" \\' });
    const res = await ctx.request('GET', '/v2/events', { query: { after: start } });
    assert.equal(res.statusCode, 200);
    assert.equal(Number(res.headers['content-length']), res.rawPayload.length);
    const events = res.json<{ events: Envelope[] }>().events;
    assert.equal(events[0]!.data.name, 'Zürich \u2603 \ud83d\ude9a "quoted" \\');
  });

  test('filters by type and vehicle; an unknown vehicle gives empty pages; next is never null', async () => {
    await ctx.registerVehicle('ev-2');
    await ctx.registerVehicle('ev-3');
    await ctx.request('PUT', '/v2/fleet/vehicles/ev-3/status', { body: { status: 'inactive' } });
    const byVehicle = await follow(undefined, 10, { vehicleId: 'ev-3' });
    assert.deepEqual(byVehicle.events.map((e) => e.type), ['vehicle.registered', 'vehicle.status_changed']);
    const byType = await follow(undefined, 10, { types: 'vehicle.status_changed', vehicleId: 'ev-3' });
    assert.deepEqual(byType.events.map((e) => e.data.to), ['inactive']);
    const nobody = await feed({ vehicleId: 'nobody' });
    assert.deepEqual(nobody.events, []);
    assert.equal(typeof nobody.next, 'string');
    // Following an exhausted cursor picks up exactly the next event.
    await ctx.request('PUT', '/v2/fleet/vehicles/ev-3/status', { body: { status: 'active' } });
    const more = await feed({ after: byType.next, types: 'vehicle.status_changed' });
    assert.deepEqual(more.events.map((e) => e.data.to), ['active']);
  });

  test('the Link header names the next page: the same request from next on, and following it reads what following next reads', async () => {
    await ctx.registerVehicle('ev-link');
    for (const status of ['inactive', 'active', 'inactive']) await ctx.request('PUT', '/v2/fleet/vehicles/ev-link/status', { body: { status } });
    const query = { types: 'vehicle.status_changed,vehicle.registered', vehicleId: 'ev-link', limit: '2' };
    const byNext = await follow(undefined, 2, { types: query.types, vehicleId: query.vehicleId });
    const ids: string[] = [];
    let path = `/v2/events?${new URLSearchParams(query).toString()}`;
    for (let pages = 0; pages < 10; pages++) {
      const res = await ctx.request('GET', path);
      assert.equal(res.statusCode, 200, res.body);
      const page = res.json<{ events: Envelope[]; next: string }>();
      const link = /^<(\/v2\/events\?[^>]+)>; rel="next"$/.exec(String(res.headers.link));
      assert.ok(link !== null, String(res.headers.link));
      const params = new URLSearchParams(link[1]!.split('?')[1]);
      assert.deepEqual(Object.fromEntries(params), { ...query, after: page.next });
      if (page.events.length === 0) break;
      ids.push(...page.events.map((e) => e.id));
      path = link[1]!;
    }
    assert.equal(ids.length, 4);
    assert.deepEqual(ids, byNext.events.map((e) => e.id));
  });

  test('organizations see only their own events', async () => {
    const other = await ctx.otherOrganization();
    await ctx.registerVehicle('ev-other', {}, other.key);
    const mine = await follow(undefined, 1000);
    assert.ok(!mine.events.some((e) => e.vehicleId === 'ev-other'));
    const theirs = await ctx.request('GET', '/v2/events', { key: other.key });
    assert.deepEqual(theirs.json().events.map((e: Envelope) => e.vehicleId), ['ev-other']);
  });

  test('bad input: 400; a pruned cursor: 410; the scope is events:read', async () => {
    const queries: Record<string, string>[] = [{ after: 'bm90LWEtY3Vyc29y' }, { after: '%%%' }, { types: 'vehicle.exploded' }, { types: 'webhook.test' }, { limit: '0' }, { limit: '1001' }, { vehicleId: 'a b' }];
    for (const query of queries) {
      const res = await ctx.request('GET', '/v2/events', { query });
      assert.equal(res.statusCode, 400, `${JSON.stringify(query)}: ${res.body}`);
      assert.match(String(res.headers['content-type']), /problem\+json/);
    }
    const first = await feed({ limit: '1' });
    await ctx.stores.events.prune(Date.now() + 60_000, 1_000_000);
    const gone = await ctx.request('GET', '/v2/events', { query: { after: first.next } });
    assert.equal(gone.statusCode, 410, gone.body);
    assert.equal(gone.json().code, 'cursor-expired');
    const denied = await ctx.request('GET', '/v2/events', { key: await ctx.keyWith(['fleet:read']) });
    assert.equal(denied.statusCode, 403);
  });
});

describe('PATCH /v2/fleet/vehicles/{id}', () => {
  test('an RFC 7396 merge patch of type, name and configuration', async () => {
    await ctx.registerVehicle('p-1', { configuration: { sensors: ['gps'], capacity: 4 } });
    const res = await ctx.request('PATCH', '/v2/fleet/vehicles/p-1', {
      body: JSON.stringify({ type: 'truck', name: 'Big one', configuration: { capacity: null, autonomyLevel: 2 } }),
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.deepEqual([body.type, body.name, body.configuration], ['truck', 'Big one', { sensors: ['gps'], autonomyLevel: 2 }]);
    assert.ok(Date.parse(body.updatedAt) > Date.parse(body.createdAt) || body.updatedAt !== body.createdAt);
    const cleared = await ctx.request('PATCH', '/v2/fleet/vehicles/p-1', { body: { name: null, configuration: null } });
    assert.deepEqual([cleared.json().name, cleared.json().configuration], [null, {}]);
    const read = await ctx.request('GET', '/v2/fleet/vehicles/p-1');
    assert.deepEqual([read.json().type, read.json().name], ['truck', null]);
  });

  test('status answers 409 naming the status route; other fields and non-objects 400; nothing changes', async () => {
    await ctx.registerVehicle('p-2', { name: 'Keep' });
    const status = await ctx.request('PATCH', '/v2/fleet/vehicles/p-2', { body: { status: 'retired' } });
    assert.equal(status.statusCode, 409);
    assert.equal(status.json().code, 'status-not-patchable');
    assert.match(status.json().detail, /PUT \/v2\/fleet\/vehicles\/\{id\}\/status/);
    for (const body of [{ id: 'other' }, { createdAt: '2026-01-01T00:00:00.000Z' }, { color: 'red' }, [], 'text', 5, { name: '' }, { name: 'x'.repeat(201) }, { type: 'tank' }, { configuration: { capacity: -1 } }]) {
      const res = await ctx.request('PATCH', '/v2/fleet/vehicles/p-2', { body: JSON.stringify(body) });
      assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`);
    }
    const read = await ctx.request('GET', '/v2/fleet/vehicles/p-2');
    assert.deepEqual([read.json().name, read.json().status], ['Keep', 'registered']);
    assert.equal((await ctx.request('PATCH', '/v2/fleet/vehicles/nobody', { body: { name: 'x' } })).statusCode, 404);
    const other = await ctx.otherOrganization();
    assert.equal((await ctx.request('PATCH', '/v2/fleet/vehicles/p-2', { body: { name: 'x' }, key: other.key })).statusCode, 404);
  });
});
