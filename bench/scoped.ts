// The load generator for people.bench.ts's group-scoped key: GETs without a body whose path goes
// round a list (request k of a run asks for `paths[k mod n]`), which load.ts's plans cannot do
// (each of them sends a body). Run by `loadPaths` in a process of its own with one JSON argument
// (PathsSpec); prints one JSON line (LoadOutcome), measured as load.ts measures: latencies as the
// floats autocannon measures, of 2xx responses only.
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { LoadOutcome } from './load.ts';

export interface PathsSpec {
  name: string;
  /** http://host:port */
  url: string;
  /** Request k of the run asks for paths[k mod paths.length]. */
  paths: string[];
  headers?: Record<string, string>;
  connections: number;
  seconds: number;
}

interface Request {
  method: string;
  path: string;
  headers?: Record<string, string>;
  setupRequest?: (request: Request) => Request;
}

type Autocannon = (
  options: Record<string, unknown>,
  done: (error: Error | null, result: { non2xx: number; errors: number; timeouts: number; duration: number }) => void,
) => { on(event: 'response', listener: (client: unknown, statusCode: number, bytes: number, responseTime: number) => void): void };

const run = promisify(execFile);

/** Runs this file with `spec` in its own process. */
export async function loadPaths(spec: PathsSpec): Promise<LoadOutcome> {
  const { stdout } = await run(process.execPath, [fileURLToPath(import.meta.url), JSON.stringify(spec)], { maxBuffer: 16 * 1024 * 1024 });
  return JSON.parse(stdout) as LoadOutcome;
}

async function runPaths(spec: PathsSpec): Promise<LoadOutcome> {
  const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;
  let k = 0;
  const request: Request = {
    method: 'GET', path: spec.paths[0]!, headers: { ...spec.headers },
    setupRequest: (req) => ({ ...req, path: spec.paths[k++ % spec.paths.length]! }),
  };
  const latencies: number[] = [];
  const cpu = process.cpuUsage();
  const started = performance.now();
  const result = await new Promise<{ non2xx: number; errors: number; timeouts: number; duration: number }>((resolve, reject) => {
    const instance = autocannon(
      { url: spec.url, connections: spec.connections, duration: spec.seconds, requests: [request] },
      (error, outcome) => (error === null ? resolve(outcome) : reject(error)),
    );
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
    });
  });
  const wall = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const sorted = Float64Array.from(latencies).sort();
  const at = (p: number) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!);
  return {
    name: spec.name, responses: latencies.length, rps: latencies.length / result.duration, p50: at(0.5), p99: at(0.99),
    non2xx: result.non2xx, errors: result.errors + result.timeouts, seconds: result.duration, loadCpu: (used.user + used.system) / 1e6 / wall,
  };
}

if (import.meta.main) {
  process.stdout.write(`${JSON.stringify(await runPaths(JSON.parse(process.argv[2] ?? '') as PathsSpec))}\n`);
}
