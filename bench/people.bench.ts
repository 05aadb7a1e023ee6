// People: reading the latest state with a session cookie against the same with an API key, in one
// run, rounds taking turns so that a busy moment of the machine falls on both; the cost of one
// password hash (the work each sign-in attempt spends); a vehicle PATCH with its audit entry
// against the same PATCH without one; and a key limited to one vehicle group against a key of the
// whole organization, listing vehicles and reading latest states among 100,000 vehicles.
//
// The audit entry: two Fleets in this process, each on an embedded store of its own, with the
// same 1,000 vehicles; request k of a run renames vehicle k mod 1,000 (a name it never had), so
// the 50 requests under way touch 50 different vehicles and no two wait for the same row. One
// Fleet is as built: each PATCH inserts its `vehicle.updated` entry in its own transaction, just
// before COMMIT. The other is the same but for that entry: the commit hook of its database answers
// that no transaction carries one, so a PATCH commits what it would without the audit log. The
// audit plugin is left as it is on both (its scope is set on every change); on the baseline it
// then hands the entry no transaction took to its after-response writer, whose store drops it. So
// both build one entry per PATCH: what is compared is the entry's row in the commit (the INSERT,
// its indexes, the change counts around it), not the plugin's bookkeeping, which both pay. Both
// audit stores count what their writers are handed (the audited one passes it on).
//
// The Fleets take turns for BENCH_ROUNDS rounds of BENCH_SECONDS after a warm-up of each, the
// first of a round alternating; the ratio is the median of the rounds' ratios (beside it, the CPU
// this process spent per PATCH, which a busy machine blurs less than the throughput). Afterwards
// each database is counted: the audited one must hold one `vehicle.updated` entry per committed
// PATCH (its `vehicle.updated` events, appended by the same transactions) and none written after
// the response; the baseline none at all.
//
// A key limited to one group against a key of the whole organization (both `fleet:read
// telemetry:read`, made through `POST /v2/api-keys`) on one Fleet of its own with 100,000
// vehicles in 100 groups of 1,000: vehicle i (`veh-000000` …) in group i mod 100, so a group's
// vehicles are spread over the ids, not a block of them. Built fast with the rows the API writes:
// the groups through `POST /v2/groups`; the vehicles through the vehicle service's `register`
// (what `POST /v2/fleet/vehicles` with `groupIds` calls: the vehicle, its membership, its history
// entry, its event) on a vehicle store over the Fleet's connection, all in one transaction instead
// of one synced transaction each; then one record per vehicle through `POST /v2/telemetry`, 1000
// a request (every vehicle `active`, with a latest state). Two loads, each for both keys: the
// first page of `GET /v2/fleet/vehicles?limit=100` (the scoped key's reads the memberships, and
// counts its 1,000 vehicles where the other counts 100,000), and `GET /v2/telemetry/{id}` going
// round the scoped key's 1,000 vehicles (bench/scoped.ts: GETs whose path varies; the scoped key
// pays the route's membership check). Measured once the setup's WAL is checkpointed; rounds as
// for the PATCH, the first of a round alternating; each ratio is the median of the rounds' scoped
// / unscoped (beside it, this process's CPU per request). Afterwards: the scoped list's total
// is 1,000 and holds only its group's vehicles, the other's 100,000, and a vehicle outside the
// group answers 404 to the scoped key, 200 to the other.
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { AuditEntry } from '../src/audit/entry.ts';
import type { AuditStore } from '../src/audit/store.ts';
import { SCOPES } from '../src/auth/scopes.ts';
import { createAuthService } from '../src/auth/service.ts';
import { systemClock } from '../src/clock.ts';
import { hashPassword } from '../src/people/password.ts';
import { beforeCommit } from '../src/storage/sqlite/database.ts';
import { createSqliteEventAppender } from '../src/storage/sqlite/events.ts';
import { createSqliteMemberships } from '../src/storage/sqlite/groups.ts';
import { type SqliteStores, createSqliteStores } from '../src/storage/sqlite/index.ts';
import { createVehicleStatuses } from '../src/storage/sqlite/vehicle-status.ts';
import { createSqliteVehicleStore } from '../src/storage/sqlite/vehicles.ts';
import type { WalSync } from '../src/storage/sqlite/wal-sync.ts';
import { createVehicleService } from '../src/vehicles/service.ts';
import { type LoadResult, TABLE_HEAD, buildBenchFleet, load, loadVarying, median, row, startBenchFleet, tempDatabases } from './lib.ts';
import type { LoadOutcome } from './load.ts';
import { dataText } from './rows.ts';
import { loadPaths } from './scoped.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 4);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const connections = 50;

const databases = tempDatabases();
const fleet = await startBenchFleet(createSqliteStores(databases.file()), ['van-1']);
const post = (url: string, body: unknown, headers: Record<string, string> = fleet.headers) => fleet.app.inject({
  method: 'POST', url, headers: { ...headers, 'content-type': 'application/json' }, payload: JSON.stringify(body),
});
const sent = await post('/v2/telemetry/van-1', { data: { location: { lat: 52.5, lng: 13.4 }, speed: 30, battery: 80 } });
if (sent.statusCode >= 300) throw new Error(sent.body);
const invited = await post('/v2/users', { email: 'bench@example.com', name: 'Bench', role: 'viewer' });
if (invited.statusCode !== 201) throw new Error(invited.body);
const accepted = await post('/auth/invitations/accept', { token: invited.json<{ invitation: { token: string } }>().invitation.token, password: 'a bench passphrase' }, {});
if (accepted.statusCode !== 200) throw new Error(accepted.body);
const cookie = String([accepted.headers['set-cookie']].flat()[0]).split(';')[0]!;

const url = `${fleet.url}/v2/telemetry/van-1`;
const keyRuns: LoadResult[] = [];
const cookieRuns: LoadResult[] = [];
for (let round = 0; round < rounds; round++) {
  keyRuns.push(await load('GET latest, API key', { url, headers: fleet.headers, connections, seconds }));
  cookieRuns.push(await load('GET latest, session cookie', { url, headers: { cookie }, connections, seconds }));
}
const best = (runs: LoadResult[]) => runs.reduce((a, b) => (b.rps > a.rps ? b : a));

const hashMs: number[] = [];
for (let i = 0; i < 5; i++) {
  const started = performance.now();
  await hashPassword('a bench passphrase');
  hashMs.push(performance.now() - started);
}

console.log(`\nLatest state, ${connections} connections, ${rounds} rounds of ${seconds} s each (best round shown)\n`);
console.log(TABLE_HEAD);
console.log(row(best(keyRuns)));
console.log(row(best(cookieRuns)));
const ratios = keyRuns.map((k, i) => cookieRuns[i]!.rps / k.rps);
console.log(`\nsession cookie / API key: ${median(ratios).toFixed(2)} x throughput (median of ${rounds} rounds; goal >= 0.90)`);
console.log(`password hash (scrypt): ${median(hashMs).toFixed(0)} ms median of 5 (goal 50 to 250 ms of one core)`);

await fleet.app.close();
await fleet.stores.close();

// Vehicle PATCH with and without its audit entry.
const VEHICLES = Array.from({ length: 1000 }, (_, i) => `veh-${String(i).padStart(4, '0')}`);
const WARMUP_SECONDS = 1;

/** `store`, counting by action the entries its after-response writer hands it; `keep: false` drops them. */
function countingAudit(store: AuditStore, keep: boolean) {
  const handed = new Map<string, number>();
  const audit: AuditStore = {
    ...store,
    async insert(entries: readonly AuditEntry[]) {
      for (const e of entries) handed.set(e.action, (handed.get(e.action) ?? 0) + 1);
      if (keep) await store.insert(entries);
    },
  };
  return { audit, handed };
}

const auditedStores = createSqliteStores(databases.file());
const auditedWriter = countingAudit(auditedStores.audit, true);
const audited = await startBenchFleet({ ...auditedStores, audit: auditedWriter.audit }, VEHICLES);
const plainStores = createSqliteStores(databases.file());
// Replaces the audit store's hook on this database: no transaction of it carries an entry.
beforeCommit(plainStores.db, { pending: () => false, begin: () => () => undefined });
const plainWriter = countingAudit(plainStores.audit, false);
const plain = await startBenchFleet({ ...plainStores, audit: plainWriter.audit }, VEHICLES);

type BenchFleet = typeof audited;
let loads = 0;
/** 2xx responses the load generator counted, per Fleet. */
const answered = new Map<BenchFleet, number>([[audited, 0], [plain, 0]]);
/**
 * One run against `target`, with the CPU this process used per answered PATCH (ms; its threads
 * too: WAL syncs, checkpoints), which a busy machine blurs less than the throughput.
 */
async function patch(target: BenchFleet, name: string, forSeconds: number): Promise<LoadOutcome & { cpuMs: number }> {
  // Names of a run start where the last run's could not reach: every request a new name.
  const start = ++loads * 10_000_000;
  const cpu = process.cpuUsage();
  const result = await loadVarying({
    name, url: target.url, method: 'PATCH', path: '/v2/fleet/vehicles/{vehicle}', headers: target.headers, connections, seconds: forSeconds,
    body: { kind: 'rename', vehicles: VEHICLES, size: 1, start },
  });
  if (result.non2xx + result.errors > 0) throw new Error(`${name}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  const used = process.cpuUsage(cpu);
  answered.set(target, answered.get(target)! + result.responses);
  return { ...result, cpuMs: (used.user + used.system) / 1000 / result.responses };
}

const AUDITED = 'PATCH vehicle, audit entry in the commit';
const PLAIN = 'PATCH vehicle, no audit entry (baseline)';
await patch(audited, AUDITED, WARMUP_SECONDS);
await patch(plain, PLAIN, WARMUP_SECONDS);
const auditedRuns: Array<LoadOutcome & { cpuMs: number }> = [];
const plainRuns: Array<LoadOutcome & { cpuMs: number }> = [];
for (let round = 0; round < rounds; round++) {
  if (round % 2 === 0) {
    auditedRuns.push(await patch(audited, AUDITED, seconds));
    plainRuns.push(await patch(plain, PLAIN, seconds));
  } else {
    plainRuns.push(await patch(plain, PLAIN, seconds));
    auditedRuns.push(await patch(audited, AUDITED, seconds));
  }
}

// Requests the generator abandoned at the end of a run may still have committed: give them a
// moment, then let the writers finish what they were handed.
await new Promise((resolve) => setTimeout(resolve, 500));
await audited.app.auditFlush();
await plain.app.auditFlush();
const count = (target: BenchFleet, sql: string) => Number(((target === audited ? auditedStores : plainStores).db.prepare(sql).get()!).n);
const updatedEvents = (target: BenchFleet) => count(target, "SELECT count(*) AS n FROM events WHERE type = 'vehicle.updated'");
const auditedEntries = count(audited, "SELECT count(*) AS n FROM audit_log WHERE action = 'vehicle.updated' AND status = 200 AND outcome = 'succeeded'");
const auditedUpdates = updatedEvents(audited);
const plainRows = count(plain, 'SELECT count(*) AS n FROM audit_log');
const plainUpdates = updatedEvents(plain);
const problems: string[] = [];
const committedOf = (label: string, target: BenchFleet, updates: number) => {
  // Each 2xx answer is a committed PATCH; a request abandoned by the generator may have committed unseen.
  const seen = answered.get(target)!;
  if (updates < seen || updates > seen + connections * (rounds + 1)) problems.push(`${label}: ${updates} committed PATCHes against ${seen} answered`);
};
committedOf('audited', audited, auditedUpdates);
committedOf('baseline', plain, plainUpdates);
if (auditedEntries !== auditedUpdates) problems.push(`audited: ${auditedEntries} vehicle.updated entries for ${auditedUpdates} committed PATCHes`);
if ((auditedWriter.handed.get('vehicle.updated') ?? 0) !== 0) problems.push(`audited: ${auditedWriter.handed.get('vehicle.updated')} vehicle.updated entries written after the response`);
if (plainRows !== 0) problems.push(`baseline: ${plainRows} audit entries written`);
// An entry left to the response is handed over once the response is sent: not for a request the
// generator abandoned, committed or not (an entry in the commit does not depend on that).
const plainHanded = plainWriter.handed.get('vehicle.updated') ?? 0;
if (plainHanded < answered.get(plain)! || plainHanded > plainUpdates) problems.push(`baseline: ${plainHanded} entries handed to its writer for ${plainUpdates} committed PATCHes`);

const summary = (runs: LoadOutcome[]): LoadResult => ({
  name: runs[0]!.name, rps: median(runs.map((r) => r.rps)), p50: Math.round(median(runs.map((r) => r.p50)) * 100) / 100,
  p99: Math.round(median(runs.map((r) => r.p99)) * 100) / 100, non2xx: 0, errors: 0,
});
console.log(`\nVehicle PATCH over ${VEHICLES.length} vehicles, ${connections} connections, ${rounds} rounds of ${seconds} s each, taking turns (medians shown)\n`);
console.log(TABLE_HEAD);
console.log(row(summary(auditedRuns)));
console.log(row(summary(plainRuns)));
const patchRatios = auditedRuns.map((a, i) => a.rps / plainRuns[i]!.rps);
console.log(`\nPATCH with audit entry / without: ${median(patchRatios).toFixed(2)} x (median of ${rounds} rounds; goal >= 0.85)`);
const cpuRatios = auditedRuns.map((a, i) => plainRuns[i]!.cpuMs / a.cpuMs);
console.log(`server CPU per PATCH: ${median(auditedRuns.map((r) => r.cpuMs)).toFixed(3)} ms with the entry, ${median(plainRuns.map((r) => r.cpuMs)).toFixed(3)} ms without; ` +
  `without / with ${median(cpuRatios).toFixed(2)} x (median of ${rounds} rounds)`);
console.log(`rounds: ${patchRatios.map((r) => r.toFixed(2)).join(', ')}; load generator CPU ${median([...auditedRuns, ...plainRuns].map((r) => r.loadCpu)).toFixed(2)} of a core (median)`);
console.log(`audited: ${auditedEntries} vehicle.updated entries for ${auditedUpdates} committed PATCHes (${answered.get(audited)} answered), none written after the response; ` +
  `baseline: ${plainRows} entries for ${plainUpdates} committed PATCHes (${answered.get(plain)} answered; ${plainHanded} entries handed to its writer and dropped)`);

await audited.app.close();
await plain.app.close();
await auditedStores.close();
await plainStores.close();

// A key limited to one group against a key of the whole organization, on 100,000 vehicles.
const GROUPED = { vehicles: 100_000, groups: 100 };
const SCOPED_GROUP = 42;
const vehicleIdOf = (i: number) => `veh-${String(i).padStart(6, '0')}`;

/** Registers vehicles 0 … count - 1 as the API does, vehicle i in groupIds[i mod G], in one transaction of `db`. */
async function registerAll(db: SqliteStores['db'], organizationId: string, credentialId: string, count: number, groupIds: readonly string[]) {
  // The one transaction around them all stands for each vehicle's own (wal-sync.ts would sync each).
  const inline: WalSync = { transaction: async (fn) => fn(), unsynced: (fn) => fn(), check() {}, close() {} };
  const appendEvents = createSqliteEventAppender(db);
  const store = createSqliteVehicleStore(db, inline, createVehicleStatuses(db, appendEvents), appendEvents, createSqliteMemberships(db));
  const service = createVehicleService({ store, clock: systemClock });
  const admin = { organizationId, credentialId, scopes: new Set(SCOPES), platform: true };
  db.exec('BEGIN IMMEDIATE');
  try {
    for (let i = 0; i < count; i++) {
      await service.register(admin, { vehicleId: vehicleIdOf(i), type: 'van', groupIds: [groupIds[i % groupIds.length]!] });
    }
    db.exec('COMMIT');
  } catch (error) {
    if (db.isTransaction) db.exec('ROLLBACK');
    throw error;
  }
}

const groupedStarted = performance.now();
const groupedStores = createSqliteStores(databases.file());
const first = await createAuthService({ store: groupedStores.auth, clock: systemClock }).bootstrap(undefined);
if (first === undefined) throw new Error('fresh store did not bootstrap');
const grouped = await buildBenchFleet(groupedStores);
const postGrouped = async (path: string, payload: object, status: number) => {
  const res = await grouped.inject({ method: 'POST', url: path, headers: { authorization: `Bearer ${first.secret}` }, payload });
  if (res.statusCode !== status) throw new Error(`POST ${path}: ${res.statusCode} ${res.body}`);
  return res.json<Record<string, unknown>>();
};
const groupIds: string[] = [];
for (let g = 0; g < GROUPED.groups; g++) groupIds.push((await postGrouped('/v2/groups', { name: `Depot ${g}` }, 201)).id as string);
await registerAll(groupedStores.db, first.organization.id, first.key.id, GROUPED.vehicles, groupIds);
const reportedAt = Date.now() - 60_000;
for (let start = 0; start < GROUPED.vehicles; start += 1000) {
  const records = Array.from({ length: Math.min(1000, GROUPED.vehicles - start) }, (_, j) => ({
    vehicleId: vehicleIdOf(start + j), timestamp: new Date(reportedAt + start + j).toISOString(), data: JSON.parse(dataText(start + j)) as unknown,
  }));
  await postGrouped('/v2/telemetry', { records }, 202);
}
const keyOf = async (name: string, groups?: string[]) => {
  const made = await postGrouped('/v2/api-keys', { name, scopes: ['fleet:read', 'telemetry:read'], ...(groups === undefined ? {} : { groupIds: groups }) }, 201);
  return { authorization: `Bearer ${made.key as string}` };
};
const wideKey = await keyOf('bench, whole organization');
const scopedKey = await keyOf('bench, one group', [groupIds[SCOPED_GROUP]!]);
// The WAL the setup left copied back (by the checkpoint worker or here) before anything is measured.
for (let tries = 0; Number(groupedStores.db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get()!.busy) !== 0; tries++) {
  if (tries === 100) throw new Error('the WAL of the setup is still being checkpointed after 10 s');
  await new Promise((resolve) => setTimeout(resolve, 100));
}
await grouped.listen({ host: '127.0.0.1', port: 0 });
const groupedUrl = `http://127.0.0.1:${(grouped.server.address() as AddressInfo).port}`;
const setupSeconds = (performance.now() - groupedStarted) / 1000;

/** The scoped key's vehicles: SCOPED_GROUP, SCOPED_GROUP + G, … */
const inGroup = Array.from({ length: GROUPED.vehicles / GROUPED.groups }, (_, j) => vehicleIdOf(SCOPED_GROUP + j * GROUPED.groups));
const LOADS = [
  { what: 'list', label: 'GET /v2/fleet/vehicles?limit=100', paths: ['/v2/fleet/vehicles?limit=100'] },
  { what: 'latest', label: `GET /v2/telemetry/{id}, round the group's ${inGroup.length}`, paths: inGroup.map((id) => `/v2/telemetry/${id}`) },
] as const;
const KEYS = [{ who: 'scoped key (1 group)', headers: scopedKey }, { who: 'unscoped key', headers: wideKey }] as const;

/** One run, with the CPU this process used per answered request (ms), which a busy machine blurs less than the throughput. */
async function scopedRun(loadIndex: number, keyIndex: number, forSeconds: number): Promise<LoadOutcome & { cpuMs: number }> {
  const { label, paths } = LOADS[loadIndex]!;
  const { who, headers } = KEYS[keyIndex]!;
  const cpu = process.cpuUsage();
  const result = await loadPaths({ name: `${label}, ${who}`, url: groupedUrl, paths: [...paths], headers, connections, seconds: forSeconds });
  const used = process.cpuUsage(cpu);
  if (result.non2xx + result.errors > 0) throw new Error(`${result.name}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { ...result, cpuMs: (used.user + used.system) / 1000 / result.responses };
}

// runs[load][key]: the rounds of that load with that key.
const runs = LOADS.map(() => KEYS.map((): Array<LoadOutcome & { cpuMs: number }> => []));
for (const l of LOADS.keys()) for (const k of KEYS.keys()) await scopedRun(l, k, WARMUP_SECONDS);
for (let round = 0; round < rounds; round++) {
  for (const l of LOADS.keys()) {
    const order = round % 2 === 0 ? [0, 1] : [1, 0];
    for (const k of order) runs[l]![k]!.push(await scopedRun(l, k, seconds));
  }
}

const scopeProblems: string[] = [];
const getGrouped = (path: string, headers: Record<string, string>) => grouped.inject({ method: 'GET', url: path, headers });
const listed = async (headers: Record<string, string>) => (await getGrouped('/v2/fleet/vehicles?limit=100', headers)).json<{ total: number; vehicles: { id: string; groupIds: string[] }[] }>();
const scopedList = await listed(scopedKey);
const wideList = await listed(wideKey);
if (scopedList.total !== inGroup.length) scopeProblems.push(`scoped list: total ${scopedList.total}, not ${inGroup.length}`);
if (scopedList.vehicles.some((v) => !inGroup.includes(v.id))) scopeProblems.push('scoped list: a vehicle outside its group');
if (wideList.total !== GROUPED.vehicles) scopeProblems.push(`unscoped list: total ${wideList.total}, not ${GROUPED.vehicles}`);
const outside = vehicleIdOf(SCOPED_GROUP + 1);
const outsideScoped = (await getGrouped(`/v2/telemetry/${outside}`, scopedKey)).statusCode;
const outsideWide = (await getGrouped(`/v2/telemetry/${outside}`, wideKey)).statusCode;
if (outsideScoped !== 404) scopeProblems.push(`${outside}, outside the group: ${outsideScoped} to the scoped key, not 404`);
if (outsideWide !== 200) scopeProblems.push(`${outside}: ${outsideWide} to the unscoped key, not 200`);

console.log(`\nGroup-scoped key against unscoped, ${GROUPED.vehicles} vehicles in ${GROUPED.groups} groups (set up in ${setupSeconds.toFixed(0)} s), ` +
  `${connections} connections, ${rounds} rounds of ${seconds} s each, taking turns (medians shown)\n`);
console.log(TABLE_HEAD);
for (const l of LOADS.keys()) for (const k of KEYS.keys()) console.log(row(summary(runs[l]![k]!)));
console.log('');
for (const [l, spec] of LOADS.entries()) {
  const [scoped, wide] = [runs[l]![0]!, runs[l]![1]!];
  const ratios = scoped.map((r, i) => r.rps / wide[i]!.rps);
  const cpuRatios = scoped.map((r, i) => wide[i]!.cpuMs / r.cpuMs);
  console.log(`${spec.what}: scoped / unscoped ${median(ratios).toFixed(2)} x throughput (median of ${rounds} rounds: ${ratios.map((r) => r.toFixed(2)).join(', ')}; goal >= 0.80); ` +
    `server CPU per request ${median(scoped.map((r) => r.cpuMs)).toFixed(3)} ms scoped, ${median(wide.map((r) => r.cpuMs)).toFixed(3)} ms unscoped, unscoped / scoped ${median(cpuRatios).toFixed(2)} x`);
}
console.log(`load generator CPU ${median(runs.flat(2).map((r) => r.loadCpu)).toFixed(2)} of a core (median); ` +
  `scoped list total ${scopedList.total}, unscoped ${wideList.total}; ${outside} (outside the group): ${outsideScoped} scoped, ${outsideWide} unscoped`);

await grouped.close();
await groupedStores.close();
databases.removeAll();
if (problems.length > 0) throw new Error(`audit entries do not match the PATCHes: ${problems.join('; ')}`);
if (scopeProblems.length > 0) throw new Error(`the scoped key does not see what it should: ${scopeProblems.join('; ')}`);
