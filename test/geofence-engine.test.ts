// The rule engine keeps an organization's geofences up to date change by change (reading again
// only those whose revision changed, and updating its index in place): on both stores it answers
// exactly as an engine that read every geofence at once, and as testing every geofence.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { contains } from '../src/geofences/geometry.ts';
import { createRuleEngine } from '../src/rules/engine.ts';
import { newId } from '../src/ids.ts';
import type { GeofenceRecord, Geometry } from '../src/geofences/model.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { skipUnlessPostgres } from './helpers/postgres.ts';
import { rect, rng } from './helpers/random.ts';

function wavy(lng: number, lat: number, radius: number, positions: number): number[][] {
  const ring: number[][] = [];
  for (let i = 0; i < positions - 1; i++) {
    const a = (2 * Math.PI * i) / (positions - 1);
    const r = radius * (1 + 0.3 * Math.sin(17 * a));
    ring.push([lng + r * Math.cos(a), lat + r * Math.sin(a)]);
  }
  ring.push(ring[0]!);
  return ring;
}

/** Circles, rectangles with holes, two-part MultiPolygons and now and then a ring of thousands of positions. */
function randomGeometry(random: () => number): Geometry {
  const lng = 13.2 + random() * 0.4, lat = 52.4 + random() * 0.25, size = 0.002 + random() * 0.05;
  const kind = random();
  if (kind < 0.05) return { type: 'Polygon', coordinates: [wavy(lng, lat, size, 4000 + Math.floor(random() * 5000))] };
  if (kind < 0.4) return { type: 'Circle', coordinates: [lng, lat], radius: 50 + random() * 3000 };
  if (kind < 0.75) return { type: 'Polygon', coordinates: [rect(lng, lat, lng + size, lat + size), rect(lng + size / 4, lat + size / 4, lng + size / 2, lat + size / 2)] };
  return { type: 'MultiPolygon', coordinates: [[rect(lng, lat, lng + size, lat + size)], [rect(lng + size * 2, lat, lng + size * 3, lat + size)]] };
}

function suite(backend: 'sqlite' | 'postgres') {
  let ctx: TestApp;
  before(async () => {
    ctx = await createTestApp({ backend });
  });
  after(async () => {
    await ctx?.close();
  });

  test('an engine updated change by change answers as one that read everything once', async () => {
    const store = ctx.stores.rules;
    const org = ctx.organizationId;
    const random = rng(backend === 'sqlite' ? 7 : 8);
    const quota = { geofences: 1_000_000, vertices: 100_000_000 };
    const all = new Map<string, GeofenceRecord>();
    const engine = createRuleEngine({ store, trips: false });
    let ts = 1_000_000;

    /** The ids of the geofences that `e` finds holding the point. */
    const inside = (e: ReturnType<typeof createRuleEngine>, lng: number, lat: number) =>
      e.commitRules.judge(org, 'v', [{ timestamp: ++ts, data: { location: { lng, lat } } }], undefined, [], ts)?.state.inside ?? [];
    const expected = (lng: number, lat: number) =>
      [...all.values()].filter((g) => contains(g.geometry, lng, lat)).map((g) => g.id).sort();
    const compare = async (points: number, fresh: boolean) => {
      let hits = 0;
      const other = fresh ? createRuleEngine({ store, trips: false }) : undefined;
      if (other !== undefined) await other.prepare(org);
      for (let i = 0; i < points; i++) {
        const lng = 13.2 + random() * 0.5, lat = 52.4 + random() * 0.3;
        const want = expected(lng, lat);
        assert.deepEqual(inside(engine, lng, lat), want, `(${lng}, ${lat})`);
        if (other !== undefined) assert.deepEqual(inside(other, lng, lat), want, `read at once: (${lng}, ${lat})`);
        hits += want.length;
      }
      return hits;
    };
    const changed = async () => {
      engine.forget(org);
      await engine.prepare(org);
    };

    let hits = 0;
    for (let step = 0; step < 400; step++) {
      const ids = [...all.keys()];
      const action = ids.length < 40 ? 0 : random();
      const now = 1_700_000_000_000 + step;
      if (action < 0.5) {
        const g: GeofenceRecord = { id: newId('gf'), organizationId: org, name: `g${step}`, geometry: randomGeometry(random), vehicleIds: null, createdAt: now, updatedAt: now };
        assert.equal(await store.insertGeofence(g, quota), 'created');
        all.set(g.id, g);
      } else if (action < 0.8) {
        // The same updatedAt as before on purpose: revisions, not times, tell the engine what changed.
        const g = { ...all.get(ids[Math.floor(random() * ids.length)]!)!, geometry: randomGeometry(random) };
        assert.equal(await store.replaceGeofence(g, quota.vertices), 'replaced');
        all.set(g.id, g);
      } else {
        const id = ids[Math.floor(random() * ids.length)]!;
        assert.equal(await store.deleteGeofence(org, id), true);
        all.delete(id);
      }
      // Several changes between loads too, as when news of them arrives together.
      const compared = step % 10 === 0 || step % 100 === 99;
      if (step % 3 !== 0 || compared) await changed();
      if (step % 10 === 0) hits += await compare(10, false);
      if (step % 100 === 99) hits += await compare(100, true);
    }
    await changed();
    hits += await compare(300, true);
    assert.ok(hits > 100, `the sample hits geofences (${hits})`);
  });
}

describe('incremental geofence loading on SQLite', () => suite('sqlite'));
describe('incremental geofence loading on PostgreSQL', { skip: await skipUnlessPostgres() }, () => suite('postgres'));
