// The load generator process for benchmarks whose requests vary (unique timestamps per record):
// autocannon run programmatically, a setupRequest building each body. Run by bench/lib.ts with one
// JSON argument (LoadSpec); prints one JSON line (LoadOutcome). Latencies are kept as the floats
// autocannon measures (its own histogram rounds to whole milliseconds), 2xx responses only.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type Plan, fleetBody, recordsBody, singleBody, trackBody, vehicleOf } from './rows.ts';

export interface LoadSpec {
  name: string;
  /** http://host:port */
  url: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH';
  /** `{vehicle}` is replaced per request when a body plan is given. */
  path: string;
  headers?: Record<string, string>;
  connections: number;
  seconds: number;
  /** Requests per second over all connections (autocannon -R). */
  rate?: number;
  /**
   * `fleet`: bodies for `POST /v2/telemetry`, each record naming its vehicle. `status`: bodies for
   * `PUT /v2/fleet/vehicles/{vehicle}/status`, request k setting vehicle k mod V to `inactive`
   * when k div V is even, else `active` (every vehicle `active` at the start: each request a change).
   * `track`: each vehicle's next records along its track (rows.ts trackBody). `rename`: bodies for
   * `PATCH /v2/fleet/vehicles/{vehicle}`, request k giving vehicle k mod V the name `Van <start + k>`
   * (a name it never had in the run).
   */
  body?: Plan & { kind: 'records' | 'single' | 'fleet' | 'status' | 'track' | 'rename' };
  /** One body for every request, built once: the cheapest load, for routes that store nothing. */
  fixedBody?: string;
}

export interface LoadOutcome {
  name: string;
  /** 2xx responses */
  responses: number;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  seconds: number;
  /** CPU the generator itself used, as a fraction of one core: near 1 means it may be the bottleneck. */
  loadCpu: number;
}

interface AutocannonRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  setupRequest?: (request: AutocannonRequest) => AutocannonRequest;
}

interface AutocannonInstance {
  on(event: 'response', listener: (client: unknown, statusCode: number, bytes: number, responseTime: number) => void): void;
}

type Autocannon = (
  options: Record<string, unknown>,
  done: (error: Error | null, result: { non2xx: number; errors: number; timeouts: number; duration: number }) => void,
) => AutocannonInstance;

const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

function statusBody(plan: Plan, k: number): string {
  return Math.floor(k / plan.vehicles.length) % 2 === 0 ? '{"status":"inactive"}' : '{"status":"active"}';
}

function renameBody(plan: Plan, k: number): string {
  return `{"name":"Van ${plan.start + k}"}`;
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

export async function runLoad(spec: LoadSpec): Promise<LoadOutcome> {
  const headers = { ...spec.headers };
  let request: AutocannonRequest = { method: spec.method, path: spec.path, headers };
  const plan = spec.body;
  if (spec.fixedBody !== undefined) {
    headers['content-type'] = 'application/json';
    request = { ...request, body: spec.fixedBody };
  } else if (plan !== undefined) {
    headers['content-type'] = 'application/json';
    let k = 0;
    request = {
      ...request,
      setupRequest(req) {
        const n = k++;
        return {
          ...req,
          path: spec.path.replace('{vehicle}', vehicleOf(plan, n)),
          body: plan.kind === 'records' ? recordsBody(plan, n) : plan.kind === 'fleet' ? fleetBody(plan, n)
            : plan.kind === 'status' ? statusBody(plan, n) : plan.kind === 'track' ? trackBody(plan, n)
              : plan.kind === 'rename' ? renameBody(plan, n) : singleBody(plan, n),
        };
      },
    };
  }

  const latencies: number[] = [];
  const cpu = process.cpuUsage();
  const started = performance.now();
  const result = await new Promise<{ non2xx: number; errors: number; timeouts: number; duration: number }>((resolve, reject) => {
    const instance = autocannon(
      {
        url: spec.url,
        connections: spec.connections,
        duration: spec.seconds,
        requests: [request],
        ...(spec.rate === undefined ? {} : { overallRate: spec.rate }),
      },
      (error, outcome) => (error === null ? resolve(outcome) : reject(error)),
    );
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
    });
  });
  const wall = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const sorted = Float64Array.from(latencies).sort();
  return {
    name: spec.name,
    responses: latencies.length,
    rps: latencies.length / result.duration,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    seconds: result.duration,
    loadCpu: (used.user + used.system) / 1e6 / wall,
  };
}

if (import.meta.main) {
  // The spec as JSON, or `@file` holding it (a plan naming many vehicles is too long for an argument).
  const argument = process.argv[2] ?? '';
  const spec = JSON.parse(argument.startsWith('@') ? readFileSync(argument.slice(1), 'utf8') : argument) as LoadSpec;
  process.stdout.write(`${JSON.stringify(await runLoad(spec))}\n`);
}
