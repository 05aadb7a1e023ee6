// Fleet for the export case of bench/history.bench.ts, in a process of its own (forked, with an
// IPC channel) on the store the parent filled: the process's memory is then the server's alone,
// not also the HTTP client's and the baseline's. Started fresh for the export, so its first
// export is the first since the process started. Tells the parent its URL, answers its questions
// about memory, and closes when told or when the parent goes.
import type { AddressInfo } from 'node:net';
import { createPostgresStores } from '../src/storage/postgres/index.ts';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import { buildBenchFleet } from './lib.ts';

export type HistoryServerSpec = { store: 'sqlite'; file: string } | { store: 'postgres'; url: string; schema: string };
export type HistoryServerRequest = { op: 'memory' } | { op: 'close' };
export type HistoryServerMessage = { type: 'ready'; url: string } | { type: 'memory'; usage: NodeJS.MemoryUsage };

const spec = JSON.parse(process.argv[2]!) as HistoryServerSpec;
const stores = spec.store === 'sqlite'
  ? createSqliteStores(spec.file)
  : await createPostgresStores({ url: spec.url, poolSize: 10, schema: spec.schema, keepDays: 30 });
const app = await buildBenchFleet(stores);
await app.listen({ host: '127.0.0.1', port: 0 });
const send = (message: HistoryServerMessage) => process.send!(message);

process.on('message', (request: HistoryServerRequest) => {
  if (request.op === 'memory') send({ type: 'memory', usage: process.memoryUsage() });
  else process.disconnect();
});
// Told to close, or the parent gone.
process.on('disconnect', () => void app.close().then(() => stores.close()).finally(() => process.exit(0)));
send({ type: 'ready', url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` });
