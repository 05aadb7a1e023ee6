// What an organization's geofences may cost, on both stores: the quota on their positions in all
// (FLEET_QUOTA_GEOFENCE_VERTICES) refuses a creation or a replacement that would pass it and
// stores nothing of it; a list page ends early once its positions would pass the page budget and
// continues from `nextOffset`; and vehicles enter and leave geofences as their shapes are changed.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PAGE_POSITIONS } from '../src/geofences/schema.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { skipUnlessPostgres } from './helpers/postgres.ts';

/** A closed ring of `positions` positions (the last repeating the first) around a center. */
function ring(positions: number, lng = 13.4, lat = 52.5, radius = 0.01): number[][] {
  const out: number[][] = [];
  for (let i = 0; i < positions - 1; i++) {
    const a = (2 * Math.PI * i) / (positions - 1);
    out.push([lng + radius * Math.cos(a), lat + radius * Math.sin(a)]);
  }
  out.push(out[0]!);
  return out;
}

const polygon = (positions: number) => ({ type: 'Polygon', coordinates: [ring(positions)] });
const square = (w: number, s: number, size: number) => ({
  type: 'Polygon', coordinates: [[[w, s], [w + size, s], [w + size, s + size], [w, s + size], [w, s]]],
});

interface Page { geofences: { id: string; geometry: { type: string; coordinates: unknown } }[]; total: number; limit: number; offset: number; nextOffset: number | null }

function suite(backend: 'sqlite' | 'postgres') {
  let ctx: TestApp;
  let small: TestApp;
  before(async () => {
    ctx = await createTestApp({ backend });
    small = await createTestApp({ backend, env: { FLEET_QUOTA_GEOFENCE_VERTICES: '30' } });
  });
  after(async () => {
    await ctx?.close();
    await small?.close();
  });

  test('the positions quota refuses a creation or a replacement past it and stores nothing of it', async () => {
    const create = (positions: number) => small.request('POST', '/v2/geofences', { body: { name: `ring of ${positions}`, geometry: polygon(positions) } });
    const first = await create(12);
    assert.equal(first.statusCode, 201, first.body);
    assert.equal((await create(12)).statusCode, 201);
    const circle = await small.request('POST', '/v2/geofences', { body: { name: 'circle', geometry: { type: 'Circle', coordinates: [13.4, 52.5], radius: 100 } } });
    assert.equal(circle.statusCode, 201, 'a circle counts one position: 25 of 30');

    const refused = await create(6);
    assert.equal(refused.statusCode, 403, refused.body);
    assert.equal(refused.json().code, 'quota-exceeded');
    assert.match(refused.json().detail, /30 positions/);
    const list = (await small.request('GET', '/v2/geofences')).json<Page>();
    assert.equal(list.total, 3, 'nothing was created');
    assert.equal((await create(5)).statusCode, 201, 'exactly at the quota is allowed');

    // 12 → 13 positions would make 31: refused, and the stored shape is the old one.
    const id = first.json<{ id: string }>().id;
    const grown = await small.request('PUT', `/v2/geofences/${id}`, { body: { name: 'grown', geometry: polygon(13) } });
    assert.equal(grown.statusCode, 403, grown.body);
    const kept = (await small.request('GET', `/v2/geofences/${id}`)).json();
    assert.equal(kept.name, 'ring of 12');
    assert.equal(kept.geometry.coordinates[0].length, 12);
    // Shrinking, or replacing with as many, is fine; then the freed positions can be used.
    assert.equal((await small.request('PUT', `/v2/geofences/${id}`, { body: { name: 'smaller', geometry: polygon(8) } })).statusCode, 200);
    assert.equal((await create(4)).statusCode, 201);
    assert.equal((await create(4)).statusCode, 403);
    // Under a quota lowered below what the organization holds, a geofence may still shrink, not grow.
    const stored = (await small.stores.rules.getGeofence(small.organizationId, id))!;
    assert.equal(await small.stores.rules.replaceGeofence({ ...stored, geometry: polygon(6) as typeof stored.geometry }, 10), 'replaced');
    assert.equal(await small.stores.rules.replaceGeofence({ ...stored, geometry: polygon(7) as typeof stored.geometry }, 10), 'vertices');
    assert.equal((await small.request('GET', `/v2/geofences/${id}`)).json().geometry.coordinates[0].length, 6);
    // Another organization has its own quota.
    const other = await small.otherOrganization();
    assert.equal((await small.request('POST', '/v2/geofences', { body: { name: 'theirs', geometry: polygon(30) }, key: other.key })).statusCode, 201);
  });

  test('a page ends once its positions would pass the budget and continues from nextOffset', async () => {
    const big = 10_000;
    const sizes = [5, big, big, big, 7, big, big, big, big, big, big, big, 5];
    const positions = new Map<string, number>();
    for (const [i, size] of sizes.entries()) {
      const body = { name: `g${i}`, geometry: size === big ? polygon(big) : square(13 + i * 0.01, 52, 0.005) };
      const res = await ctx.request('POST', '/v2/geofences', { body });
      assert.equal(res.statusCode, 201, res.body);
      positions.set(res.json<{ id: string }>().id, size);
    }
    assert.ok(sizes.reduce((a, b) => a + b, 0) > PAGE_POSITIONS, 'the geofences pass one page\'s budget');

    // The order, one geofence a page.
    const order: string[] = [];
    for (let offset = 0; ; offset++) {
      const page = (await ctx.request('GET', '/v2/geofences', { query: { limit: '1', offset: String(offset) } })).json<Page>();
      if (page.geofences.length === 0) break;
      order.push(page.geofences[0]!.id);
      assert.equal(page.nextOffset, offset + 1 < sizes.length ? offset + 1 : null);
    }
    assert.equal(order.length, sizes.length);

    const walked: string[] = [];
    let offset: number | null = 0;
    let cut = false;
    while (offset !== null) {
      const res = await ctx.request('GET', '/v2/geofences', { query: { limit: '50', offset: String(offset) } });
      assert.equal(res.statusCode, 200);
      const page: Page = res.json<Page>();
      assert.equal(page.total, sizes.length);
      assert.equal(page.offset, offset);
      const used = page.geofences.reduce((sum, g) => sum + positions.get(g.id)!, 0);
      assert.ok(used <= PAGE_POSITIONS, `${used} positions in one page`);
      if (page.nextOffset !== null) {
        assert.equal(page.nextOffset, offset + page.geofences.length);
        if (page.geofences.length < page.limit) cut = true;
      }
      walked.push(...page.geofences.map((g) => g.id));
      offset = page.nextOffset;
    }
    assert.ok(cut, 'a page was cut short of its limit');
    assert.deepEqual(walked, order, 'every geofence once, in order');
    // An offset past the end: empty, the true total, no next page.
    const past = (await ctx.request('GET', '/v2/geofences', { query: { offset: '100' } })).json<Page>();
    assert.deepEqual([past.geofences.length, past.total, past.nextOffset], [0, sizes.length, null]);
  });

  test('vehicles enter and leave as geofences are created, moved and deleted between their records', async () => {
    const org = await ctx.otherOrganization('Crossings');
    const key = org.key;
    await ctx.registerVehicle('x-1', {}, key);
    let t = Date.now() - 3_600_000;
    const send = async (lng: number, lat: number) => {
      t += 1000;
      const res = await ctx.request('POST', '/v2/telemetry/x-1', { key, body: { records: [{ timestamp: new Date(t).toISOString(), data: { location: { lat, lng } } }] } });
      assert.equal(res.statusCode, 202, res.body);
    };
    const events = async () => {
      const res = await ctx.request('GET', '/v2/events', { key, query: { vehicleId: 'x-1', types: 'geofence.entered,geofence.exited', limit: '1000' } });
      return res.json().events.map((e: { type: string; data: { geofenceId: string } }) => `${e.type.slice(9)} ${e.data.geofenceId}`);
    };
    const put = async (id: string, geometry: unknown) => {
      const res = await ctx.request('PUT', `/v2/geofences/${id}`, { key, body: { name: 'moving', geometry } });
      assert.equal(res.statusCode, 200, res.body);
    };
    const created = await ctx.request('POST', '/v2/geofences', { key, body: { name: 'moving', geometry: square(10, 50, 1) } });
    const a = created.json<{ id: string }>().id;
    const b = (await ctx.request('POST', '/v2/geofences', { key, body: { name: 'big', geometry: polygon(5000) } })).json<{ id: string }>().id;
    await send(10.5, 50.5);
    await put(a, square(20, 50, 1));
    await send(10.5, 50.5);
    await send(20.5, 50.5);
    await put(a, square(20, 50, 2));
    await send(21.5, 51.5);
    await send(13.4, 52.5);
    await put(b, polygon(6000));
    await send(13.4, 52.505);
    assert.equal((await ctx.request('DELETE', `/v2/geofences/${b}`, { key })).statusCode, 204);
    await send(13.4, 52.5);
    await send(21, 51);
    // On PostgreSQL an event is readable once every older transaction on the server has ended
    // (another test's, say): read until all six are, then check them.
    let seen: string[] = [];
    for (const deadline = Date.now() + 15_000; seen.length < 6 && Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) seen = await events();
    assert.deepEqual(seen, [
      `entered ${a}`, `exited ${a}`, `entered ${a}`, `entered ${b}`, `exited ${a}`, `entered ${a}`,
    ]);
  });
}

describe('geofence limits on SQLite', () => suite('sqlite'));
describe('geofence limits on PostgreSQL', { skip: await skipUnlessPostgres() }, () => suite('postgres'));
