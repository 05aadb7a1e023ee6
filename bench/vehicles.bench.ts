// Vehicle reads through the whole stack (auth, SQLite, serialization) against a bare Fastify
// route that returns a JSON object of the same shape through a response schema, in one run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import type { AddressInfo } from 'node:net';
import { buildApp } from '../src/app.ts';
import { createAuthService } from '../src/auth/service.ts';
import { systemClock } from '../src/clock.ts';
import { loadConfig } from '../src/config.ts';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import { inlineNamed } from '../src/schema/named.ts';
import { VehicleDetails } from '../src/vehicles/schema.ts';
import { TABLE_HEAD, load, row } from './lib.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const connections = 50;

const dir = mkdtempSync(path.join(tmpdir(), 'fleet-bench-'));
const stores = createSqliteStores(path.join(dir, 'fleet.db'));
const first = await createAuthService({ store: stores.auth, clock: systemClock }).bootstrap(undefined);
if (first === undefined) throw new Error('fresh store did not bootstrap');
const loaded = loadConfig({ FLEET_LOG_LEVEL: 'warn', FLEET_RATE_LIMIT_REQUESTS: '0', FLEET_OVERLOAD_EVENT_LOOP_DELAY_MS: '0', FLEET_MQTT_PORT: '0', FLEET_OSMAND_PORT: '0', FLEET_TELTONIKA_PORT: '0' });
if (!loaded.ok) throw new Error(loaded.errors.join('; '));
const fleet = await buildApp({ config: loaded.config, stores });
await fleet.listen({ host: '127.0.0.1', port: 0 });
const fleetUrl = `http://127.0.0.1:${(fleet.server.address() as AddressInfo).port}`;
const auth = { authorization: `Bearer ${first.secret}` };

for (let i = 0; i < 1000; i++) {
  const res = await fleet.inject({
    method: 'POST', url: '/v2/fleet/vehicles', headers: auth,
    payload: { vehicleId: `veh-${String(i).padStart(4, '0')}`, type: 'van', configuration: { sensors: ['gps'], capacity: 4 } },
  });
  if (res.statusCode !== 201) throw new Error(res.body);
}
const sample = (await fleet.inject({ method: 'GET', url: '/v2/fleet/vehicles/veh-0500', headers: auth })).json<unknown>();

const bare = Fastify();
// The same schema Fleet's serializer compiles: its named parts written out in place.
bare.get('/vehicle', { schema: { response: { 200: inlineNamed(VehicleDetails) } } }, async () => sample);
await bare.listen({ host: '127.0.0.1', port: 0 });
const bareUrl = `http://127.0.0.1:${(bare.server.address() as AddressInfo).port}`;

const results = [];
results.push(await load('bare Fastify: GET small JSON with response schema', { url: `${bareUrl}/vehicle`, connections, seconds }));
results.push(await load('Fleet: GET /v2/fleet/vehicles/{id}', { url: `${fleetUrl}/v2/fleet/vehicles/veh-0500`, headers: auth, connections, seconds }));
results.push(await load('Fleet: GET /v2/fleet/vehicles?limit=50', { url: `${fleetUrl}/v2/fleet/vehicles?limit=50&offset=400`, headers: auth, connections, seconds }));

console.log(`\nVehicle reads, ${connections} connections, ${seconds} s each\n`);
console.log(TABLE_HEAD);
for (const r of results) console.log(row(r));
const [base, details] = results;
console.log(`\nGET details / bare route: ${(details!.rps / base!.rps).toFixed(2)} x throughput`);

await fleet.close();
await bare.close();
await stores.close();
rmSync(dir, { recursive: true, force: true });
