// A full disk under the embedded store, on a real process whose database lives on a size-limited
// tmpfs mounted for this test (root only): ingestion answers 503 with Retry-After and /readyz 503
// while the disk is full, reads go on, the service is ready again by itself once space returns,
// and every acknowledged record is stored (also after a restart); no refused one is.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmdirSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { generateApiKey } from '../src/auth/keys.ts';
import { historyOf as history, request, type RunningFleet, startFleet } from './helpers/process.ts';
import { skipUnless } from './helpers/skip.ts';

function whyNoTmpfs(): string | undefined {
  if (process.platform !== 'linux') return `not available on ${process.platform}`;
  if (process.getuid?.() !== 0) return `not permitted: the tests run as uid ${process.getuid?.()}, and mounting needs root`;
  // Root may still be refused (a container without CAP_SYS_ADMIN): try once.
  const probe = mkdtempSync(path.join(tmpdir(), 'fleet-tmpfs-probe-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe], { stdio: 'pipe' });
    execFileSync('umount', [probe], { stdio: 'pipe' });
    return undefined;
  } catch (error) {
    return `not possible here (${String((error as { stderr?: Buffer }).stderr ?? error).trim()})`;
  } finally {
    rmdirSync(probe);
  }
}

const skip = skipUnless(whyNoTmpfs(), 'Mounting a size-limited tmpfs', 'the disk-full suite', 'Run the tests as root');

const VEHICLES = ['full-1', 'full-2', 'full-3'];
type Data = Record<string, unknown>;

/** A tmpfs of `size` on a fresh directory, unmounted and removed after the test. */
function mountTmpfs(t: { after(fn: () => void): void }, size: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'fleet-tmpfs-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', dir]);
  t.after(() => {
    try {
      execFileSync('umount', [dir], { stdio: 'pipe' });
    } catch {
      // Still in use (a failed test's process, killed by its own hook after this one): detached
      // now, freed by the kernel once that process is gone.
      execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
    }
    rmdirSync(dir);
  });
  return dir;
}

/** Writes `file` until the filesystem has no byte left for it. */
function fillDisk(file: string): number {
  const fd = openSync(file, 'w');
  let written = 0;
  try {
    for (let size = 1 << 20; size >= 1; ) {
      try {
        written += writeSync(fd, Buffer.alloc(size, 0x5a));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
        size >>= 1;
      }
    }
  } finally {
    closeSync(fd);
  }
  return written;
}

describe('the embedded store on a full disk', { skip }, () => {
  test('503 with Retry-After and readiness down while full; ready again by itself; nothing acknowledged lost', { timeout: 90_000 }, async (t) => {
    const disk = mountTmpfs(t, '64m');
    const key = generateApiKey();
    const env = { FLEET_ADMIN_KEY: key, FLEET_DATABASE_URL: `sqlite:${disk}/fleet.db`, FLEET_RATE_LIMIT_REQUESTS: '0' };
    let fleet: RunningFleet = await startFleet(t, { env });
    for (const vehicleId of VEHICLES) {
      const res = await request(fleet, 'POST', '/v2/fleet/vehicles', { key, body: { vehicleId, type: 'van' } });
      assert.equal(res.status, 201, await res.text());
    }

    const T0 = Date.now() - 3_600_000;
    let counter = 0;
    const acked = new Map<string, Set<number>>(VEHICLES.map((id) => [id, new Set()]));
    const refused = new Map<string, Set<number>>(VEHICLES.map((id) => [id, new Set()]));
    let round = 0;
    /** One request (a single record, or 20 of one vehicle, alternately); its status and body. */
    async function ingest(): Promise<Response> {
      const vehicleId = VEHICLES[round % VEHICLES.length]!;
      const count = round++ % 2 === 0 ? 1 : 20;
      const stamps = Array.from({ length: count }, () => T0 + counter++);
      const records = stamps.map((ts) => ({ timestamp: new Date(ts).toISOString(), data: { speed: ts % 120, diagnostics: { note: 'x'.repeat(200) } } }));
      const res = await request(fleet, 'POST', `/v2/telemetry/${vehicleId}`, { key, body: count === 1 ? records[0] : { records } });
      const into = res.status === 202 ? acked : refused;
      if (res.status === 202 || res.status === 503) for (const ts of stamps) into.get(vehicleId)!.add(ts);
      return res;
    }

    for (let i = 0; i < 20; i++) assert.equal((await ingest()).status, 202);
    const created = await request(fleet, 'POST', '/v2/geofences', { key, body: { name: 'Depot', geometry: { type: 'Circle', coordinates: [13.4, 52.5], radius: 500 } } });
    assert.equal(created.status, 201, await created.clone().text());
    const geofenceId = ((await created.json()) as Data).id as string;

    const ballast = path.join(disk, 'ballast');
    const filled = fillDisk(ballast);
    t.diagnostic(`ballast: ${filled} bytes`);

    // The WAL may still have room in its last page; the first write that needs a new one fails.
    let full: Response | undefined;
    for (let i = 0; i < 500 && full === undefined; i++) {
      const res = await ingest();
      if (res.status === 503) full = res;
      else assert.equal(res.status, 202, await res.text());
    }
    assert.ok(full !== undefined, 'a write on the full disk was refused');
    assert.equal(full.headers.get('content-type'), 'application/problem+json');
    assert.equal(full.headers.get('retry-after'), '30');
    const problem = (await full.json()) as Data;
    assert.equal(problem.status, 503);
    assert.equal(problem.code, 'service-unavailable');
    assert.match(String(problem.detail), /disk is full/);

    const notReady = await request(fleet, 'GET', '/readyz');
    assert.equal(notReady.status, 503);
    assert.ok(notReady.headers.get('retry-after') !== null);
    await notReady.body?.cancel();
    // Still full: still refused (or, should a write fit after all, stored and acknowledged).
    for (let i = 0; i < 5; i++) assert.ok([202, 503].includes((await ingest()).status));
    // Reads need no space.
    const latest = await request(fleet, 'GET', `/v2/telemetry/${VEHICLES[0]}`, { key });
    assert.equal(latest.status, 200);
    await latest.body?.cancel();
    assert.equal((await request(fleet, 'GET', '/readyz')).status, 503, 'not ready while the disk stays full');
    // A management write of one statement (no transaction of its own) that needs new pages: 503
    // as well, not a 500.
    const ring = Array.from({ length: 2000 }, (_, i) => {
      const a = (2 * Math.PI * i) / 2000;
      return [13.4 + 0.01 * Math.cos(a), 52.5 + 0.01 * Math.sin(a)];
    });
    const replaced = await request(fleet, 'PUT', `/v2/geofences/${geofenceId}`, { key, body: { name: 'Depot', geometry: { type: 'Polygon', coordinates: [[...ring, ring[0]]] } } });
    assert.equal(replaced.status, 503, await replaced.clone().text());
    assert.equal(replaced.headers.get('retry-after'), '30');
    await replaced.body?.cancel();

    unlinkSync(ballast);
    const deadline = Date.now() + 15_000;
    for (;;) {
      const ready = await request(fleet, 'GET', '/readyz');
      await ready.body?.cancel();
      if (ready.status === 200) break;
      assert.ok(Date.now() < deadline, 'ready again within 15 s of the space coming back');
      await sleep(100);
    }
    for (let i = 0; i < 20; i++) assert.equal((await ingest()).status, 202, 'ingestion works again, without a restart');

    await checkStored(fleet);
    assert.deepEqual(await fleet.stop('SIGTERM'), { code: 0, signal: null });
    fleet = await startFleet(t, { env });
    await checkStored(fleet);
    assert.deepEqual(await fleet.stop('SIGTERM'), { code: 0, signal: null });
    const db = new DatabaseSync(path.join(disk, 'fleet.db'), { readOnly: true });
    try {
      assert.deepEqual(db.prepare('PRAGMA integrity_check').all().map((row) => row.integrity_check), ['ok']);
    } finally {
      db.close();
    }

    async function checkStored(on: RunningFleet) {
      for (const vehicleId of VEHICLES) {
        const stored = new Set((await history(on, key, vehicleId)).map((r) => Date.parse(r.timestamp as string)));
        const lost = [...acked.get(vehicleId)!].filter((ts) => !stored.has(ts));
        assert.deepEqual(lost, [], `${vehicleId}: acknowledged records lost`);
        const kept = [...refused.get(vehicleId)!].filter((ts) => stored.has(ts));
        assert.deepEqual(kept, [], `${vehicleId}: records answered 503 were stored`);
        assert.equal(stored.size, acked.get(vehicleId)!.size);
      }
    }
  });
});
