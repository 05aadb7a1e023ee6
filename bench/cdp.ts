// Chromium driven over the DevTools protocol with nothing attached but what a measurement asks
// for. playwright-core enables the Network domain on every page it drives, and with it Chromium
// reports every WebSocket frame the page receives to the driver (payload included): under a live
// stream of thousands of messages a second that is work for the page's renderer, the browser
// process and the driver that no operator's browser does. This driver enables Runtime (for
// evaluations and the page's uncaught errors) and what the caller asks for (Performance, Tracing),
// nothing else. The connection is Chromium's --remote-debugging-pipe (file descriptors 3 and 4,
// JSON messages ended by a NUL byte), as Playwright's own.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';

type Params = Record<string, unknown>;
type Listener = (params: any, sessionId: string | undefined) => void;

export interface CdpPage {
  /** The browser process; Chromium's other processes are its descendants. */
  pid: number;
  /** A command to the page's target (or, with `browser`, to the browser itself). */
  send<T = any>(method: string, params?: Params, target?: 'page' | 'browser'): Promise<T>;
  on(method: string, listener: Listener): void;
  off(method: string, listener: Listener): void;
  /** Runs `source` before any script of every document the page loads from now on. */
  addInitScript(source: string): Promise<void>;
  /** Navigates and waits until the document has loaded. */
  goto(url: string, timeoutMs?: number): Promise<void>;
  /** Evaluates an expression in the page, awaiting a promise, and returns its value (as JSON). */
  evaluate<T>(expression: string): Promise<T>;
  /** Uncaught errors in the page. */
  pageErrors: string[];
  close(): Promise<void>;
}

export async function launchCdp(executable: string, args: readonly string[], viewport: { width: number; height: number }): Promise<CdpPage> {
  const profile = mkdtempSync(path.join(tmpdir(), 'fleet-chromium-'));
  const child: ChildProcess = spawn(executable, [
    ...args, `--user-data-dir=${profile}`, '--remote-debugging-pipe', `--window-size=${viewport.width},${viewport.height}`,
    '--hide-scrollbars', '--mute-audio', 'about:blank',
  ], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const toBrowser = child.stdio[3] as Writable;
  const fromBrowser = child.stdio[4] as Readable;
  const exited = once(child, 'exit');

  let nextId = 1;
  const waiting = new Map<number, { resolve: (value: any) => void; reject: (error: Error) => void; method: string }>();
  const listeners = new Map<string, Set<Listener>>();
  let pending = '';
  fromBrowser.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    let end: number;
    while ((end = pending.indexOf('\0')) >= 0) {
      const message = JSON.parse(pending.slice(0, end)) as { id?: number; result?: unknown; error?: { message: string }; method?: string; params?: unknown; sessionId?: string };
      pending = pending.slice(end + 1);
      if (message.id !== undefined) {
        const call = waiting.get(message.id);
        waiting.delete(message.id);
        if (message.error !== undefined) call?.reject(new Error(`${call.method}: ${message.error.message}`));
        else call?.resolve(message.result);
      } else if (message.method !== undefined) {
        for (const listener of listeners.get(message.method) ?? []) listener(message.params, message.sessionId);
      }
    }
  });
  void exited.then(() => {
    for (const call of waiting.values()) call.reject(new Error(`Chromium exited during ${call.method}: ${stderr.trim().split('\n').slice(-5).join('\n')}`));
    waiting.clear();
  });

  function raw<T>(method: string, params: Params = {}, sessionId?: string): Promise<T> {
    const id = nextId++;
    const done = new Promise<T>((resolve, reject) => waiting.set(id, { resolve, reject, method }));
    toBrowser.write(`${JSON.stringify({ id, method, params, ...(sessionId === undefined ? {} : { sessionId }) })}\0`);
    return done;
  }

  let sessionId: string;
  try {
    // The tab Chromium opened at start, or a new one if it has not shown yet.
    let targetId: string | undefined;
    for (let i = 0; i < 50 && targetId === undefined; i++) {
      const { targetInfos } = await raw<{ targetInfos: { targetId: string; type: string }[] }>('Target.getTargets');
      targetId = targetInfos.find((t) => t.type === 'page')?.targetId;
      if (targetId === undefined) await sleep(100);
    }
    targetId ??= (await raw<{ targetId: string }>('Target.createTarget', { url: 'about:blank' })).targetId;
    ({ sessionId } = await raw<{ sessionId: string }>('Target.attachToTarget', { targetId, flatten: true }));
  } catch (error) {
    child.kill('SIGKILL');
    rmSync(profile, { recursive: true, force: true });
    throw error;
  }

  const pageErrors: string[] = [];
  const on = (method: string, listener: Listener) => {
    let set = listeners.get(method);
    if (set === undefined) listeners.set(method, set = new Set());
    set.add(listener);
  };
  on('Runtime.exceptionThrown', (params: { exceptionDetails: { text: string; exception?: { description?: string } } }, from) => {
    if (from === sessionId) pageErrors.push(params.exceptionDetails.exception?.description ?? params.exceptionDetails.text);
  });
  // The viewport as Playwright sets it, so that both drivers show the page at the same size.
  await raw('Emulation.setDeviceMetricsOverride', { ...viewport, deviceScaleFactor: 1, mobile: false, screenWidth: viewport.width, screenHeight: viewport.height }, sessionId);
  await raw('Runtime.enable', {}, sessionId);
  await raw('Page.enable', {}, sessionId);

  const send = <T>(method: string, params?: Params, target: 'page' | 'browser' = 'page') => raw<T>(method, params, target === 'page' ? sessionId : undefined);
  async function evaluate<T>(expression: string): Promise<T> {
    const reply = await send<{ result: { value?: T }; exceptionDetails?: { text: string; exception?: { description?: string } } }>(
      'Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true });
    if (reply.exceptionDetails !== undefined) throw new Error(reply.exceptionDetails.exception?.description ?? reply.exceptionDetails.text);
    return reply.result.value as T;
  }

  return {
    pid: child.pid!,
    send,
    on,
    off(method, listener) {
      listeners.get(method)?.delete(listener);
    },
    async addInitScript(source) {
      await send('Page.addScriptToEvaluateOnNewDocument', { source });
    },
    async goto(url, timeoutMs = 30_000) {
      const { errorText } = await send<{ errorText?: string }>('Page.navigate', { url });
      if (errorText !== undefined) throw new Error(`navigating to ${url}: ${errorText}`);
      const end = Date.now() + timeoutMs;
      for (;;) {
        try {
          if (await evaluate<boolean>(`location.href === ${JSON.stringify(url)} && document.readyState === 'complete'`)) return;
        } catch {
          // The old document went while asking.
        }
        if (Date.now() > end) throw new Error(`${url} did not load within ${timeoutMs} ms`);
        await sleep(100);
      }
    },
    evaluate,
    pageErrors,
    async close() {
      if (child.exitCode === null && child.signalCode === null) {
        await Promise.race([raw('Browser.close').catch(() => undefined), sleep(5000)]);
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
