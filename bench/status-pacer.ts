// A steady load of status changes for the fixed-rate delivery case of bench/events.bench.ts, in
// its own process: request k sets vehicle k mod V to `inactive` when k div V is even, else
// `active` (as bench/load.ts's `status` bodies), sent evenly over time (every 2 ms, those due by
// then), not in a burst at the start of each second as autocannon's rate limit sends them. Run
// with one JSON argument (PacerSpec); prints one JSON line (a LoadOutcome).
import { Agent, request } from 'undici';
import type { LoadOutcome } from './load.ts';

export interface PacerSpec {
  url: string;
  headers: Record<string, string>;
  vehicles: string[];
  /** Requests per second. */
  rate: number;
  seconds: number;
}

if (import.meta.main) {
  const spec = JSON.parse(process.argv[2] ?? '') as PacerSpec;
  const dispatcher = new Agent({ connections: 100 });
  const headers = { ...spec.headers, 'content-type': 'application/json' };
  const latencies: number[] = [];
  let sent = 0;
  let non2xx = 0;
  let errors = 0;
  const inFlight = new Set<Promise<void>>();
  const cpu = process.cpuUsage();
  const started = performance.now();
  const one = async (k: number) => {
    const vehicle = spec.vehicles[k % spec.vehicles.length]!;
    const body = Math.floor(k / spec.vehicles.length) % 2 === 0 ? '{"status":"inactive"}' : '{"status":"active"}';
    const at = performance.now();
    try {
      const res = await request(`${spec.url}/v2/fleet/vehicles/${vehicle}/status`, { method: 'PUT', headers, body, dispatcher });
      await res.body.dump();
      if (res.statusCode >= 200 && res.statusCode < 300) latencies.push(performance.now() - at);
      else non2xx++;
    } catch {
      errors++;
    }
  };
  while (performance.now() - started < spec.seconds * 1000) {
    const due = Math.floor(((performance.now() - started) / 1000) * spec.rate);
    while (sent < due) {
      const p = one(sent++);
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  const seconds = (performance.now() - started) / 1000;
  await Promise.all(inFlight);
  const used = process.cpuUsage(cpu);
  await dispatcher.close();
  const sorted = Float64Array.from(latencies).sort();
  const at = (p: number) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!);
  const outcome: LoadOutcome = {
    name: `status changes at ${spec.rate}/s`, responses: latencies.length, rps: latencies.length / seconds, p50: at(0.5), p99: at(0.99),
    non2xx, errors, seconds, loadCpu: (used.user + used.system) / 1e6 / ((performance.now() - started) / 1000),
  };
  process.stdout.write(`${JSON.stringify(outcome)}\n`);
}
