// A Fleet for bench/tracing.bench.ts, in a process of its own (forked, with an IPC channel), so
// that each side's OpenTelemetry state (a tracer provider, a context manager) is its own: on a
// fresh SQLite store with the given vehicles and variables. Tells the parent its URL and key, and
// closes when the parent goes.
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import { startBenchFleet } from './lib.ts';

export interface TracingServerSpec {
  file: string;
  vehicles: string[];
  env: Record<string, string>;
}
export interface TracingServerReady { url: string; headers: Record<string, string> }

const spec = JSON.parse(process.argv[2]!) as TracingServerSpec;
const stores = createSqliteStores(spec.file);
const fleet = await startBenchFleet(stores, spec.vehicles, () => spec.env);
process.on('disconnect', () => void fleet.app.close().then(() => stores.close()).finally(() => process.exit(0)));
process.send!({ url: fleet.url, headers: fleet.headers } satisfies TracingServerReady);
