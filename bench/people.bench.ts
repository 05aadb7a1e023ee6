// People: reading the latest state with a session cookie against the same with an API key, in one
// run, rounds taking turns so that a busy moment of the machine falls on both; and the cost of one
// password hash (the work each sign-in attempt spends).
import { performance } from 'node:perf_hooks';
import { hashPassword } from '../src/people/password.ts';
import { type LoadResult, TABLE_HEAD, load, median, row, startBenchFleet, tempDatabases } from './lib.ts';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';

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
databases.removeAll();
