// A Fleet for bench/tracing.bench.ts, in a process of its own (forked, with an IPC channel), so
// that each side's OpenTelemetry state (a tracer provider, a context manager) is its own: on a
// fresh SQLite store with the given vehicles and variables, from this checkout or another one.
// Tells the parent its URL and key, and closes when the parent goes.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { createSqliteStores as CreateStores } from '../src/storage/sqlite/index.ts';
import type { startBenchFleet as StartFleet } from './lib.ts';

export interface TracingServerSpec {
  file: string;
  vehicles: string[];
  env: Record<string, string>;
  /** Another checkout of Fleet whose code this server runs (its bench/lib.ts and store); default this one. */
  checkout?: string;
}
export interface TracingServerReady { url: string; headers: Record<string, string> }

const spec = JSON.parse(process.argv[2]!) as TracingServerSpec;
const root = spec.checkout === undefined ? new URL('../', import.meta.url) : pathToFileURL(path.join(spec.checkout, '/'));
const { createSqliteStores } = await import(new URL('src/storage/sqlite/index.ts', root).href) as { createSqliteStores: typeof CreateStores };
const { startBenchFleet } = await import(new URL('bench/lib.ts', root).href) as { startBenchFleet: typeof StartFleet };
const stores = createSqliteStores(spec.file);
const fleet = await startBenchFleet(stores, spec.vehicles, () => spec.env);
process.on('disconnect', () => void fleet.app.close().then(() => stores.close()).finally(() => process.exit(0)));
process.send!({ url: fleet.url, headers: fleet.headers } satisfies TracingServerReady);
