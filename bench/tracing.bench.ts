// What traces cost: single-record ingest and GET latest on three Fleets, each in a process of its
// own (bench/tracing-server.ts) on a fresh SQLite store: without tracing (no OTLP endpoint: nothing
// of OpenTelemetry loaded), with every request traced (`always_on`), and with a tenth sampled
// (`parentbased_traceidratio`, 0.1). The traced ones export over OTLP/HTTP to a receiver in this
// process, which counts the spans it is sent; the exporter's defaults (a queue of 2048 spans, sent
// every 5 s) hold, as they would in service. Load comes from bench/load.ts in its own process.
//
// The three take turns for BENCH_ROUNDS rounds (default 5) of BENCH_SECONDS (default 3) after a
// warm-up; the medians are reported, with each Fleet's CPU from /proc. BENCH_CASES=single,latest.
// BENCH_CHECKOUTS=name=/path,... adds a Fleet without an endpoint from each of those checkouts (git
// worktrees with node_modules linked): the code before traces came, say, against the code after.
import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, release } from 'node:os';
import { fileURLToPath } from 'node:url';
import { nextMessage, runPlans, tempDatabases, turnTaking } from './lib.ts';
import type { LoadSpec } from './load.ts';
import { processCpuSeconds } from './proc-cpu.ts';
import type { TracingServerReady, TracingServerSpec } from './tracing-server.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const warmupSeconds = 1;
const cases = new Set((process.env.BENCH_CASES ?? 'single,latest').split(','));
const VEHICLES = Array.from({ length: 100 }, (_, i) => `veh-${String(i).padStart(3, '0')}`);
const plan = runPlans(VEHICLES);
const print = (line = '') => console.log(line);

/** A local OTLP/HTTP receiver: counts the spans of every JSON export posted to it, answers 200. */
const received = { spans: 0, exports: 0 };
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceSpans?: { scopeSpans?: { spans?: unknown[] }[] }[] };
    for (const r of body.resourceSpans ?? []) for (const s of r.scopeSpans ?? []) received.spans += s.spans?.length ?? 0;
    received.exports++;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

const databases = tempDatabases();
const SIDES: Array<{ name: string; env: Record<string, string>; checkout?: string }> = [
  { name: 'tracing off (no endpoint)', env: {} },
  { name: 'every request traced (always_on)', env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_SAMPLER: 'always_on' } },
  { name: 'a tenth traced (parentbased_traceidratio 0.1)', env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' } },
];
for (const entry of (process.env.BENCH_CHECKOUTS ?? '').split(',').filter((e) => e !== '')) {
  const [name, checkout] = entry.split('=') as [string, string];
  SIDES.push({ name: `${name}, no endpoint (${checkout})`, env: {}, checkout });
}
const script = fileURLToPath(new URL('./tracing-server.ts', import.meta.url));
const servers = await Promise.all(SIDES.map(async (side) => {
  const spec: TracingServerSpec = { file: databases.file(), vehicles: VEHICLES, env: side.env, ...(side.checkout === undefined ? {} : { checkout: side.checkout }) };
  const child = fork(script, [JSON.stringify(spec)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = await nextMessage<TracingServerReady>(child, `${side.name}: the server`);
  return { ...side, ...ready, pid: child.pid!, child };
}));

const { interleaved, summary } = turnTaking({
  seconds, rounds: ROUNDS, warmupSeconds, plan, cpuSeconds: (spec) => processCpuSeconds(servers.find((s) => s.url === spec.url)!.pid),
});

async function compare(title: string, spec: Omit<LoadSpec, 'url' | 'headers'>) {
  const rounds = await interleaved(servers.map((server) => ({ ...spec, url: server.url, headers: server.headers })));
  const offRps = summary(rounds[0]!).rps;
  print();
  print(`### ${title}`);
  print();
  print('| case | req/s | p50 ms | p99 ms | server CPU | req/s / off (rounds) |');
  print('|---|---|---|---|---|---|');
  for (const [i, server] of servers.entries()) {
    const r = summary(rounds[i]!);
    const ratios = rounds[i]!.map((round, k) => round.rps / rounds[0]![k]!.rps);
    print(`| ${server.name} | ${r.rps.toFixed(0)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${(r.serverCpu * 100).toFixed(0)} % | ` +
      `${i === 0 ? '1' : `**${(r.rps / offRps).toFixed(2)} ×** (${Math.min(...ratios).toFixed(2)} to ${Math.max(...ratios).toFixed(2)})`} |`);
  }
}

print(`Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, Linux ${release()}. ` +
  `${ROUNDS} rounds of ${seconds} s taking turns after a ${warmupSeconds} s warm-up; medians.`);

if (cases.has('single')) {
  await compare('Single-record ingest, 100 connections', {
    name: 'POST /v2/telemetry/{id}', method: 'POST', path: '/v2/telemetry/{vehicle}', connections: 100, seconds, body: { kind: 'single', ...plan(1) },
  });
}
if (cases.has('latest')) {
  for (const server of servers) {
    const res = await fetch(`${server.url}/v2/telemetry/veh-001`, {
      method: 'POST', headers: { ...server.headers, 'content-type': 'application/json' }, body: JSON.stringify({ data: { speed: 42, battery: 80 } }),
    });
    if (res.status !== 202) throw new Error(`${server.name}: seeding answered ${res.status}`);
  }
  await compare('GET latest, 50 connections', { name: 'GET /v2/telemetry/veh-001', method: 'GET', path: '/v2/telemetry/veh-001', connections: 50, seconds });
}

// What the traced Fleets sent, once their exporters have flushed (every 5 s).
await new Promise((resolve) => setTimeout(resolve, 6000));
print();
print(`Spans received: ${received.spans} in ${received.exports} exports (the exporter drops what its queue of 2048 cannot hold).`);
for (const server of servers) server.child.disconnect();
receiver.close();
databases.removeAll();
