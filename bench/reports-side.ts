// One side of bench/reports.bench.ts's ingest comparison, in a process of its own (forked, with an
// IPC channel): a Fleet on its own store whose rule engine keeps meters, rollups and who drives,
// or not. A process runs one configuration, as a deployed Fleet does: with both sides in one
// process, the engine's code saw both shapes of state (meters and rollups present and absent) and
// each side ran slower, the side with them most (56 µs a record beside the other side, 46 beside a
// second side like it, on one host).
//
// Each `{ commits }` message: that many commits of 100 requests (one vehicle each) of `per`
// records, called on the store directly; the answer is the cost per record, in µs: this process's
// CPU time on SQLite (the store runs in it), the wall time on PostgreSQL (another process).
import { createRuleEngine } from '../src/rules/engine.ts';
import { createPostgresStores } from '../src/storage/postgres/index.ts';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import type { Stores } from '../src/storage/stores.ts';
import { mergeLatest } from '../src/telemetry/latest.ts';
import type { CommitBatch } from '../src/telemetry/store.ts';
import { startBenchFleet } from './lib.ts';
import { trackDataText } from './rows.ts';

export type ReportsSideSpec = { meters: boolean; per: number } & ({ file: string } | { url: string; schema: string });
export interface ReportsSideRound { commits: number }
export interface ReportsSideCost { cost: number }

const VEHICLES = Array.from({ length: 100 }, (_, i) => `veh-${String(i).padStart(3, '0')}`);

/** Half the vehicles read their driver's iButton; every record says whether the engine runs. */
const iButtonOf = (v: number) => (v % 2 === 0 ? `00000000${String(v).padStart(8, '0')}` : undefined);

function dataOf(v: number, n: number): CommitBatch['records'][number]['data'] {
  const data = JSON.parse(trackDataText(v, n)) as CommitBatch['records'][number]['data'];
  data.ignition = n % 10 !== 0;
  const iButton = iButtonOf(v);
  if (iButton !== undefined) data.driverIdentifier = iButton;
  return data;
}

const spec = JSON.parse(process.argv[2]!) as ReportsSideSpec;
const stores: Stores = 'file' in spec
  ? createSqliteStores(spec.file)
  : await createPostgresStores({ url: spec.url, poolSize: 10, schema: spec.schema, keepDays: 30 });
const fleet = await startBenchFleet(stores, VEHICLES);
for (const [v] of VEHICLES.entries()) {
  const value = iButtonOf(v);
  if (value === undefined) continue;
  const res = await fleet.app.inject({ method: 'POST', url: '/v2/drivers', headers: fleet.headers, payload: { name: `Driver ${v}`, identifiers: [{ kind: 'ibutton', value }] } });
  if (res.statusCode !== 201) throw new Error(res.body);
}
const engine = createRuleEngine({ store: stores.rules, trips: true, meters: spec.meters });
await engine.prepare(fleet.organizationId);

const start = Date.now() - 20 * 86_400_000;
let committed = 0;
async function round(commits: number): Promise<number> {
  const { per } = spec;
  const cpu = process.cpuUsage();
  const wall = performance.now();
  for (let c = 0; c < commits; c++, committed++) {
    const batches: CommitBatch[] = VEHICLES.map((vehicleId, v) => ({
      organizationId: fleet.organizationId, at: Date.now(),
      records: Array.from({ length: per }, (_, i) => {
        const n = committed * per + i;
        return { vehicleId, timestamp: start + n * 1000, data: dataOf(v, n) };
      }),
    }));
    const outcomes = await stores.telemetry.commit(batches, mergeLatest, engine.commitRules);
    if (outcomes.some((o) => !o.ok || o.accepted !== per)) throw new Error('a commit did not store every record');
  }
  const used = process.cpuUsage(cpu);
  const records = commits * VEHICLES.length * per;
  return 'file' in spec ? (used.user + used.system) / records : ((performance.now() - wall) * 1000) / records;
}

process.on('message', (m: ReportsSideRound) => {
  void round(m.commits).then((cost) => process.send!({ cost } satisfies ReportsSideCost), (error: unknown) => {
    console.error(error);
    process.exit(1);
  });
});
process.on('disconnect', () => void fleet.app.close().then(() => stores.close()).finally(() => process.exit(0)));
process.send!({ cost: 0 } satisfies ReportsSideCost);
