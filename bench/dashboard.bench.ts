// The dashboard under a busy fleet: 10,000 vehicles each reporting once a second (10 HTTP
// batches of 1,000 records a second), their positions reaching the browser's fleet page through
// the live stream, and the page measured in headless Chromium (Debian's package) with the
// Performance API: the time between animation frames (requestAnimationFrame deltas) and the long
// tasks (PerformanceObserver 'longtask', > 50 ms) over BENCH_DASHBOARD_SECONDS (30), after 10 s of
// the same page with no updates as a baseline within the run. Goal: frame time p95 < 50 ms under
// the updates.
//
// Processes: the service and the load generator run in a child process (SQLite on /dev/shm where
// there is one, so the disk does not set the pace); this one drives the browser, whose own
// processes render the page. The stream's messages are counted in the page.
//
// Where they run, BENCH_DASHBOARD_CPUS: `separate` (the default) pins the service's side (the
// service, the generator, this driver) to half of the cores and Chromium to the other half with
// cpuset cgroups, as in use, where the browser runs on the operator's machine and the service
// elsewhere; `shared` lets them all use every core. As root both are also weighted against other
// work on the machine (cpu cgroups); every group made is removed at the end (cgroup.ts).
//
// The driver, BENCH_DASHBOARD_DRIVER: `cdp` (the default) speaks the DevTools protocol itself
// with only the Runtime and Performance domains on (cdp.ts); `playwright` is playwright-core,
// which enables the Network domain, and with it a DevTools event to the driver for every
// WebSocket frame the page receives (work no operator's browser does).
//
// Reported besides the frames: the renderer main thread's time in tasks, script, style and layout
// (Performance.getMetrics), and the CPU each process and its busiest threads used (/proc).
// BENCH_DASHBOARD_TRACE=<file.json> (or empty for no file) records TRACE_SECONDS (5) more of a
// Chromium trace under the updates (cdp driver) and sums up which threads and which work on the
// renderer's main thread took the time.
// Tuning: BENCH_DASHBOARD_VEHICLES (10000), BENCH_DASHBOARD_SECONDS (30).
import assert from 'node:assert/strict';
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { CHROMIUM, CHROMIUM_ARGS, freePort, openBrowser } from '../test/helpers/browser.ts';
import { type CdpPage, launchCdp } from './cdp.ts';
import { cpuCgroups, cpuGroup, cpusetCgroups, cpusetGroup, leaveGroup, removeAll } from './cgroup.ts';
import { recordTrace, summarize } from './chrome-trace.ts';
import { allowedCpus, chromiumKind, cpuShares, processTree, sampleThreads } from './proc-cpu.ts';

const VEHICLES = Number(process.env.BENCH_DASHBOARD_VEHICLES ?? 10_000);
const SECONDS = Number(process.env.BENCH_DASHBOARD_SECONDS ?? 30);
const BASELINE_SECONDS = 10;
const BATCH = 1000;
/** Batches a second: every vehicle once a second. */
const TICKS = Math.ceil(VEHICLES / BATCH);
const MAX_IN_FLIGHT = 8;
const GOAL_P95_MS = 50;
const CPUS = process.env.BENCH_DASHBOARD_CPUS ?? 'separate';
const DRIVER = process.env.BENCH_DASHBOARD_DRIVER ?? 'cdp';
const TRACE = process.env.BENCH_DASHBOARD_TRACE;
const TRACE_SECONDS = 5;
/** The weight of the benchmark's cpu cgroups against other work (see cgroup.ts). */
const WEIGHT = 8;

const ids = Array.from({ length: VEHICLES }, (_, i) => `veh-${String(i).padStart(5, '0')}`);

/** Vehicle i drives round its own small circle somewhere in a 1° × 1.6° box around Berlin. */
function positionOf(i: number, t: number): { lat: number; lng: number; heading: number } {
  const lat0 = 52.0 + ((i * 7919) % 1000) / 1000;
  const lng0 = 12.6 + ((i * 104_729) % 1600) / 1000;
  const angle = (t / 60) * 2 * Math.PI + i;
  return {
    lat: lat0 + 0.002 * Math.sin(angle),
    lng: lng0 + 0.003 * Math.cos(angle),
    heading: ((((angle + Math.PI / 2) * 180) / Math.PI) % 360 + 360) % 360,
  };
}

type Message =
  | { type: 'ready'; origin: string; key: string; registerSeconds: number }
  | { type: 'stats'; sent: number; skipped: number; failed: number; error?: string };

// ---- the service and the load generator (child process) ---------------------------------------

async function serve(port: number): Promise<void> {
  const { buildApp } = await import('../src/app.ts');
  const { createAuthService } = await import('../src/auth/service.ts');
  const { systemClock } = await import('../src/clock.ts');
  const { loadConfig } = await import('../src/config.ts');
  const { createSqliteStores } = await import('../src/storage/sqlite/index.ts');
  const dir = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'fleet-bench-dashboard-'));
  const stores = createSqliteStores(path.join(dir, 'fleet.db'));
  const origin = `http://127.0.0.1:${port}`;
  const auth = createAuthService({ store: stores.auth, clock: systemClock });
  const first = await auth.bootstrap(undefined);
  assert.ok(first !== undefined);
  const loaded = loadConfig({
    FLEET_LOG_LEVEL: 'warn', FLEET_RATE_LIMIT_REQUESTS: '0', FLEET_OVERLOAD_EVENT_LOOP_DELAY_MS: '0', FLEET_MQTT_PORT: '0',
    FLEET_OSMAND_PORT: '0', FLEET_TELTONIKA_PORT: '0', FLEET_QUOTA_VEHICLES: String(VEHICLES + 10), FLEET_PUBLIC_URL: origin, FLEET_MAP_TILE_URL: '',
  });
  if (!loaded.ok) throw new Error(loaded.errors.join('; '));
  const app = await buildApp({ config: loaded.config, stores });
  const headers = { authorization: `Bearer ${first.secret}`, 'content-type': 'application/json' };
  const started = Date.now();
  for (const vehicleId of ids) {
    const res = await app.inject({ method: 'POST', url: '/v2/fleet/vehicles', headers, payload: { vehicleId, type: 'van' } });
    if (res.statusCode !== 201) throw new Error(res.body);
  }
  await app.listen({ host: '127.0.0.1', port });

  /** Sends batch `tick` of second `t`: vehicles tick·1000 … tick·1000+999. */
  async function send(tick: number, t: number): Promise<number> {
    const timestamp = new Date().toISOString();
    const records = ids.slice(tick * BATCH, (tick + 1) * BATCH).map((vehicleId, j) => {
      const { lat, lng, heading } = positionOf(tick * BATCH + j, t);
      return { vehicleId, timestamp, data: { location: { lat, lng }, heading, speed: 30 } };
    });
    const res = await fetch(`${origin}/v2/telemetry`, { method: 'POST', headers, body: JSON.stringify({ records }) });
    if (res.status !== 202) throw new Error(`ingest: ${res.status} ${await res.text()}`);
    return records.length;
  }
  // Every vehicle has a position before the page opens.
  for (let tick = 0; tick < TICKS; tick++) await send(tick, 0);
  const key = (await auth.createKey(first.organization.id, { name: 'bench', scopes: ['fleet:read', 'telemetry:read', 'streams'] })).secret;
  process.send!({ type: 'ready', origin, key, registerSeconds: (Date.now() - started) / 1000 } satisfies Message);

  // The load: TICKS batches a second on a fixed schedule, each sent when due whether or not the
  // one before has been answered (devices do not wait for each other), at most MAX_IN_FLIGHT at
  // once; a batch beyond that is skipped and counted.
  let running = false;
  const stats = { sent: 0, skipped: 0, failed: 0, error: undefined as string | undefined };
  const pending = new Set<Promise<void>>();
  process.on('message', (command: string) => {
    if (command === 'start') {
      running = true;
      void (async () => {
        const t0 = performance.now();
        for (let n = 0; running; n++) {
          const wait = t0 + (n * 1000) / TICKS - performance.now();
          if (wait > 0) await sleep(wait);
          if (pending.size >= MAX_IN_FLIGHT) {
            stats.skipped++;
            continue;
          }
          const request: Promise<void> = send(n % TICKS, Math.floor(n / TICKS) + 1).then((records) => {
            stats.sent += records;
          }, (error: unknown) => {
            stats.failed++;
            stats.error ??= String(error);
          }).finally(() => pending.delete(request));
          pending.add(request);
        }
      })();
    } else if (command === 'stats') {
      process.send!({ type: 'stats', ...stats } satisfies Message);
    } else if (command === 'stop') {
      running = false;
      void (async () => {
        await Promise.all(pending);
        await app.close();
        await stores.close();
        rmSync(dir, { recursive: true, force: true });
        process.exit(0);
      })();
    }
  });
}

// ---- the browser (this process) -----------------------------------------------------------------

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

interface Measured {
  frames: number[];
  longTasks: number[];
  messages: number;
  /** WebSocket frames (messages, or several in a frame on a batched socket). */
  wsFrames: number;
  /** Time in the stream's message handlers. */
  messageMs: number;
}

function summary(name: string, m: Measured, seconds: number): string {
  const f = [...m.frames].sort((a, b) => a - b);
  const longMs = m.longTasks.reduce((a, b) => a + b, 0);
  return `| ${name} | ${f.length} | ${(f.length / seconds).toFixed(1)} | ${quantile(f, 0.5).toFixed(1)} | **${quantile(f, 0.95).toFixed(1)}** | ` +
    `${quantile(f, 0.99).toFixed(1)} | ${f.at(-1)?.toFixed(1)} | ${m.longTasks.length} | ${Math.round(longMs)} | ${Math.round(m.messages / seconds)} | ${(m.messageMs / seconds / 10).toFixed(1)} % |`;
}

function next(child: ChildProcess, type: Message['type']): Promise<Message> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: Message) => {
      if (message.type !== type) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(message);
    };
    const onExit = (code: number | null) => reject(new Error(`the service process exited (${code})`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

// ---- where the processes run ---------------------------------------------------------------------

interface Side {
  /** Moves a process into this side's groups; processes it starts later are born there. */
  add(pid: number): void;
  cpus: string;
}

interface Placement {
  service: Side;
  browser: Side;
  note: string;
  /** Moves `pid` out of every group made, then removes the groups. */
  release(pid: number): Promise<void>;
}

/**
 * The service's side (service, load generator, this driver) and the browser's. Separated (the
 * default): each side pinned to half of the cores by a cpuset cgroup, as in use, where the
 * browser runs on the operator's machine and the service elsewhere. Shared: all on every core.
 * Either way, as root, the processes are in cpu cgroups weighted WEIGHT × a process outside a
 * group, so other work on a shared machine takes less from them (cgroup.ts).
 */
function place(): Placement {
  const cores = cpus().length;
  const all = Array.from({ length: cores }, (_, i) => i);
  const sets = cpusetCgroups();
  const weights = cpuCgroups();
  const shared: Side = { add: () => undefined, cpus: `0-${cores - 1}` };
  const nothing = { service: shared, browser: shared, release: async () => undefined };
  if (CPUS === 'separate' && (sets.kind === 'none' || cores < 2)) {
    return { ...nothing, note: `**NOT separated** (${sets.kind === 'none' ? sets.why : 'one core'}): the service, the generator and Chromium share all ${cores} cores` };
  }
  // On cgroup v2 a process is in one group of one hierarchy: cpusets only, no weights.
  const weightsV1 = weights.kind === 'v1' ? weights : undefined;
  const side = (name: string, cores: number[]): Side => {
    const set = sets.kind === 'none' ? undefined : cpusetGroup(sets, `fleet-bench-${process.pid}-${name}`, cores);
    const weight = weightsV1 === undefined ? undefined : cpuGroup(weightsV1, `fleet-bench-${process.pid}-${name}`, undefined, WEIGHT);
    return {
      cpus: set?.cpus ?? `0-${cores.length - 1}`,
      add(pid) {
        set?.add(pid);
        weight?.add(pid);
      },
    };
  };
  const release = async (pid: number) => {
    if (sets.kind !== 'none') leaveGroup(sets, pid);
    if (weightsV1 !== undefined) leaveGroup(weightsV1, pid);
    // A process that has just exited may count in its group for a moment.
    let left = removeAll();
    for (let i = 0; i < 30 && left.length > 0; i++) {
      await sleep(100);
      left = removeAll();
    }
    if (left.length > 0) console.error(`could not remove the cgroups ${left.join(', ')} (processes still in them?)`);
  };
  const weighted = weightsV1 !== undefined ? `, weighted ${WEIGHT} × a process outside a group (cpu cgroups)` : '';
  if (CPUS === 'shared') {
    if (sets.kind === 'none' && weightsV1 === undefined) return { ...nothing, note: `shared: the service, the generator and Chromium on all ${cores} cores` };
    const both = side('all', all);
    return { service: both, browser: both, release, note: `shared: the service, the generator, this driver and Chromium on cores ${both.cpus}${weighted}` };
  }
  const half = Math.floor(cores / 2);
  const service = side('service', all.slice(0, half));
  const browser = side('browser', all.slice(half));
  return {
    service, browser, release,
    note: `separated (cpuset cgroups): the service, the generator and this driver on core${half > 1 ? 's' : ''} ${service.cpus}, ` +
      `Chromium's processes on core${cores - half > 1 ? 's' : ''} ${browser.cpus}${weighted}`,
  };
}

// ---- the browser driver -------------------------------------------------------------------------

interface Driver {
  description: string;
  addInitScript(source: string): Promise<void>;
  goto(url: string): Promise<void>;
  evaluate<T>(expression: string): Promise<T>;
  /** The renderer's Performance.getMetrics, by name. */
  metrics(): Promise<Map<string, number>>;
  cdp: CdpPage | undefined;
  pageErrors: string[];
  close(): Promise<void>;
}

const VIEWPORT = { width: 1360, height: 900 };

async function openDriver(): Promise<Driver> {
  const metrics = async (send: (method: string) => Promise<{ metrics: { name: string; value: number }[] }>) =>
    new Map((await send('Performance.getMetrics')).metrics.map((m) => [m.name, m.value]));
  if (DRIVER === 'playwright') {
    const session = await openBrowser(VIEWPORT, 60_000);
    const cdp = await session.browser.newCDPSession(session.page);
    await cdp.send('Performance.enable');
    return {
      description: 'playwright-core (its Network domain reports every WebSocket frame to the driver)',
      addInitScript: async (source) => {
        await session.page.addInitScript(source);
      },
      goto: async (url) => {
        await session.page.goto(url);
      },
      evaluate: (expression) => session.page.evaluate(expression),
      metrics: () => metrics((method) => cdp.send(method as 'Performance.getMetrics')),
      cdp: undefined,
      pageErrors: session.pageErrors,
      close: () => session.close(),
    };
  }
  const page = await launchCdp(CHROMIUM, CHROMIUM_ARGS, VIEWPORT);
  await page.send('Performance.enable');
  return {
    description: 'the DevTools protocol over a pipe, Runtime and Performance domains only (bench/cdp.ts)',
    addInitScript: (source) => page.addInitScript(source),
    goto: (url) => page.goto(url, 60_000),
    evaluate: (expression) => page.evaluate(expression),
    metrics: () => metrics((method) => page.send(method)),
    cdp: page,
    pageErrors: page.pageErrors,
    close: () => page.close(),
  };
}

/** Chromium's processes: the browser this process started and its descendants. */
function chromiumProcesses(): Map<number, string> {
  const mine = processTree(process.pid).filter((pid) => pid !== process.pid);
  const browser = mine.find((pid) => chromiumKind(pid) === 'browser' && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--remote-debugging-pipe'));
  const found = new Map<number, string>();
  if (browser === undefined) return found;
  for (const pid of processTree(browser)) found.set(pid, `chromium ${chromiumKind(pid)}`);
  return found;
}

async function waitInPage(driver: Driver, condition: string, timeoutMs: number): Promise<void> {
  await driver.evaluate(`new Promise((resolve, reject) => {
    const end = performance.now() + ${timeoutMs};
    const tick = () => {
      if (${condition}) resolve(true);
      else if (performance.now() > end) reject(new Error(${JSON.stringify(`not within ${timeoutMs} ms: ${condition}`)}));
      else setTimeout(tick, 100);
    };
    tick();
  })`);
}

function load(): string {
  return loadavg().map((n) => n.toFixed(2)).join(', ');
}

async function orchestrate(): Promise<void> {
  if (!existsSync(CHROMIUM)) {
    console.error(`no Chromium at ${CHROMIUM}: apt-get install chromium (or set FLEET_TEST_CHROMIUM)`);
    process.exit(2);
  }
  if (!['separate', 'shared'].includes(CPUS)) throw new Error(`BENCH_DASHBOARD_CPUS must be separate or shared, not ${CPUS}`);
  if (!['cdp', 'playwright'].includes(DRIVER)) throw new Error(`BENCH_DASHBOARD_DRIVER must be cdp or playwright, not ${DRIVER}`);
  const loadBefore = load();
  const placement = place();
  placement.service.add(process.pid);
  const port = await freePort();
  const child = fork(fileURLToPath(import.meta.url), ['serve', String(port)], { stdio: 'inherit' });
  let driver: Driver | undefined;
  try {
    const ready = await next(child, 'ready');
    assert.ok(ready.type === 'ready');
    console.log(`${VEHICLES} vehicles registered and placed in ${ready.registerSeconds.toFixed(1)} s`);
    // Chromium is started from the browser's side: its processes are all born there.
    placement.browser.add(process.pid);
    try {
      driver = await openDriver();
    } finally {
      placement.service.add(process.pid);
    }
    const browserProcesses = chromiumProcesses();
    const where = new Map<string, number>();
    for (const pid of browserProcesses.keys()) where.set(allowedCpus(pid), (where.get(allowedCpus(pid)) ?? 0) + 1);
    console.log(`CPUs: ${placement.note}; checked: the service on ${allowedCpus(child.pid!)}, this driver on ${allowedCpus(process.pid)}, ` +
      `Chromium's ${browserProcesses.size} processes on ${[...where].map(([c, n]) => `${c} (${n})`).join(', ')}`);
    console.log(`driver: ${driver.description}`);
    // Counts the stream's messages (one a line: a batched socket's frame holds several) and
    // frames in the page, and the time its handlers take (not through the driver, which would add
    // work).
    await driver.addInitScript(`(() => {
      const Native = window.WebSocket;
      window.__messages = 0;
      window.__frames = 0;
      window.__messageMs = 0;
      window.WebSocket = class extends Native {
        addEventListener(type, listener, options) {
          if (type !== 'message') return super.addEventListener(type, listener, options);
          return super.addEventListener(type, (event) => {
            const started = performance.now();
            window.__frames++;
            if (typeof event.data === 'string') {
              for (let i = event.data.indexOf('\\n'); i !== -1; i = event.data.indexOf('\\n', i + 1)) window.__messages++;
            }
            window.__messages++;
            listener.call(this, event);
            window.__messageMs += performance.now() - started;
          }, options);
        }
      };
    })()`);
    await driver.goto(`${ready.origin}/`);
    await waitInPage(driver, `document.querySelector('#api-key') !== null`, 60_000);
    let started = Date.now();
    await driver.evaluate(`(() => {
      const input = document.querySelector('#api-key');
      input.value = ${JSON.stringify(ready.key)};
      input.form.requestSubmit();
    })()`);
    await waitInPage(driver, `document.querySelector('.fleet .map[data-vehicles="${VEHICLES}"]') !== null && ` +
      `document.querySelector('#live-state')?.textContent === 'Live'`, 120_000);
    console.log(`the page (${await driver.evaluate<string>('`${innerWidth} × ${innerHeight}`')}) shows ${VEHICLES} vehicles ` +
      `${((Date.now() - started) / 1000).toFixed(1)} s after signing in`);

    const measure = async (seconds: number): Promise<Measured> => {
      const result = driver!.evaluate<Measured>(`new Promise((resolve) => {
        const frames = [];
        const longTasks = [];
        const observer = new PerformanceObserver((list) => { for (const e of list.getEntries()) longTasks.push(e.duration); });
        observer.observe({ type: 'longtask', buffered: false });
        const messages = window.__messages;
        const wsFrames = window.__frames;
        const messageMs = window.__messageMs;
        const end = performance.now() + ${seconds * 1000};
        let last;
        const frame = (now) => {
          if (last !== undefined) frames.push(now - last);
          last = now;
          if (now < end) requestAnimationFrame(frame);
          else { observer.disconnect(); resolve({ frames, longTasks, messages: window.__messages - messages, wsFrames: window.__frames - wsFrames, messageMs: window.__messageMs - messageMs }); }
        };
        requestAnimationFrame(frame);
      })`);
      const limit = sleep((seconds + 120) * 1000).then(() => {
        throw new Error(`the page did not finish measuring within ${seconds + 120} s`);
      });
      return Promise.race([result, limit]);
    };

    const baseline = await measure(BASELINE_SECONDS);
    child.send('start');
    // Two seconds for the stream to reach its pace before measuring.
    await sleep(2000);
    child.send('stats');
    const before = await next(child, 'stats');
    const labelled = new Map<number, string>([...chromiumProcesses(), [child.pid!, 'service + load generator'], [process.pid, 'benchmark driver']]);
    const threadsBefore = sampleThreads(labelled);
    const metricsBefore = await driver.metrics();
    started = Date.now();
    const underLoad = await measure(SECONDS);
    const window = (Date.now() - started) / 1000;
    const metricsAfter = await driver.metrics();
    const shares = cpuShares(threadsBefore, sampleThreads(labelled), window);
    child.send('stats');
    const after = await next(child, 'stats');
    assert.ok(before.type === 'stats' && after.type === 'stats');
    const buildMs = await driver.evaluate<string | null>(`document.querySelector('.fleet .map')?.dataset.buildMs ?? null`);
    const loadAfter = load();

    const p95 = quantile([...underLoad.frames].sort((a, b) => a - b), 0.95);
    console.log(`\nNode ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}; ${VEHICLES} vehicles; records stored during the window ` +
      `${Math.round((after.sent - before.sent) / window)}/s (offered ${VEHICLES}/s; batches skipped ${after.skipped - before.skipped}, failed ${after.failed - before.failed}` +
      `${after.error === undefined ? '' : `: ${after.error}`}); cluster index rebuild ${buildMs} ms; load average ${loadBefore} before the run, ${loadAfter} after the window\n`);
    console.log('| case | frames | frames/s | p50 ms | p95 ms | p99 ms | max ms | long tasks | long-task ms | stream messages/s | main thread in message handlers |');
    console.log('|---|---|---|---|---|---|---|---|---|---|---|');
    console.log(summary(`no updates, ${BASELINE_SECONDS} s`, baseline, BASELINE_SECONDS));
    console.log(summary(`${VEHICLES} vehicles updating once a second, ${SECONDS} s`, underLoad, SECONDS));
    console.log(`\nthe stream's WebSocket frames: ${Math.round(underLoad.wsFrames / SECONDS)} a second, ${(underLoad.messages / Math.max(1, underLoad.wsFrames)).toFixed(1)} messages a frame`);

    const share = (name: string) => `${(((metricsAfter.get(name) ?? 0) - (metricsBefore.get(name) ?? 0)) / window * 100).toFixed(1)} %`;
    console.log(`\nthe renderer's main thread under the updates (Performance.getMetrics): tasks ${share('TaskDuration')} of the time ` +
      `(script ${share('ScriptDuration')}, style ${share('RecalcStyleDuration')}, layout ${share('LayoutDuration')}); ` +
      `its CPU ${share('ThreadTime')}, the renderer process's ${share('ProcessTime')}`);
    console.log('\nCPU during the window (/proc; 100 % = one core):\n');
    console.log('| process | CPU | busiest threads |');
    console.log('|---|---|---|');
    for (const s of shares.filter((s) => s.cores >= 0.005)) {
      console.log(`| ${s.label} | ${(s.cores * 100).toFixed(1)} % | ${s.threads.filter((t) => t.cores >= 0.005).slice(0, 5).map((t) => `${t.name} ${(t.cores * 100).toFixed(1)} %`).join(', ')} |`);
    }
    const total = shares.reduce((sum, s) => sum + s.cores, 0);
    console.log(`| all of these | ${(total * 100).toFixed(1)} % of ${cpus().length * 100} % | |`);

    if (TRACE !== undefined) {
      if (driver.cdp === undefined) {
        console.log('\nBENCH_DASHBOARD_TRACE needs BENCH_DASHBOARD_DRIVER=cdp: no trace taken');
      } else {
        const traced = summarize(await recordTrace(driver.cdp, TRACE_SECONDS, TRACE === '' ? undefined : TRACE));
        console.log(`\nA trace of ${traced.seconds.toFixed(1)} s more under the updates${TRACE === '' ? '' : ` (${TRACE})`}: busy threads, ms a second\n`);
        console.log(traced.threads.slice(0, 14).map((t) => `  ${t.thread}: ${t.msPerSecond.toFixed(0)}`).join('\n'));
        console.log('\nthe renderer main thread, self time by event, ms a second\n');
        console.log(traced.rendererMain.slice(0, 20).map((t) => `  ${t.name}: ${t.msPerSecond.toFixed(1)}`).join('\n'));
      }
    }

    console.log(`\nframe time p95 ${p95.toFixed(1)} ms: goal < ${GOAL_P95_MS} ms ${p95 < GOAL_P95_MS ? 'met' : 'NOT met'}`);
    assert.deepEqual(driver.pageErrors, [], 'uncaught errors in the page');
  } finally {
    await driver?.close();
    if (child.exitCode === null) {
      child.send('stop');
      await once(child, 'exit');
    }
    await placement.release(process.pid);
  }
}

if (process.argv[2] === 'serve') {
  await serve(Number(process.argv[3]));
} else {
  await orchestrate();
}
