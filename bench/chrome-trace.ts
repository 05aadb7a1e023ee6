// A Chromium performance trace (CDP Tracing, JSON trace events) recorded and summed up: for the
// threads that make a page's frames, how busy each was, and on the renderer's main thread which
// kinds of work took the time (self time per event name).
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CdpPage } from './cdp.ts';

const CATEGORIES = [
  'toplevel', 'blink', 'cc', 'viz', 'gpu', 'v8', 'devtools.timeline', 'disabled-by-default-devtools.timeline',
  'blink.user_timing', 'loading', 'renderer.scheduler',
];

interface TraceEvent {
  ph: string;
  name: string;
  pid: number;
  tid: number;
  ts: number;
  dur?: number;
  args?: { name?: string };
}

/** Records `seconds` of trace of the whole browser; writes it to `file` when given. */
export async function recordTrace(page: CdpPage, seconds: number, file?: string): Promise<TraceEvent[]> {
  const events: TraceEvent[] = [];
  const onData = (params: { value: TraceEvent[] }) => {
    events.push(...params.value);
  };
  page.on('Tracing.dataCollected', onData);
  let complete!: () => void;
  const completed = new Promise<void>((resolve) => {
    complete = resolve;
  });
  page.on('Tracing.tracingComplete', () => complete());
  await page.send('Tracing.start', { transferMode: 'ReportEvents', traceConfig: { includedCategories: CATEGORIES, recordMode: 'recordContinuously' } }, 'browser');
  await sleep(seconds * 1000);
  await page.send('Tracing.end', {}, 'browser');
  await completed;
  page.off('Tracing.dataCollected', onData);
  if (file !== undefined) writeFileSync(file, JSON.stringify({ traceEvents: events }));
  return events;
}

export interface TraceSummary {
  /** Busy time of each thread (top-level tasks), ms per second, by "process/thread". */
  threads: { thread: string; msPerSecond: number }[];
  /** The renderer main thread's self time by event name, ms per second. */
  rendererMain: { name: string; msPerSecond: number }[];
  /** The length of the trace, s. */
  seconds: number;
}

export function summarize(events: readonly TraceEvent[]): TraceSummary {
  const processNames = new Map<number, string>();
  const threadNames = new Map<string, string>();
  for (const e of events) {
    if (e.ph === 'M' && e.name === 'process_name') processNames.set(e.pid, e.args?.name ?? String(e.pid));
    if (e.ph === 'M' && e.name === 'thread_name') threadNames.set(`${e.pid}:${e.tid}`, e.args?.name ?? String(e.tid));
  }
  // Complete events per thread, B/E pairs folded into them.
  const byThread = new Map<string, { name: string; ts: number; dur: number }[]>();
  const open = new Map<string, TraceEvent[]>();
  let first = Infinity;
  let last = -Infinity;
  for (const e of events) {
    const key = `${e.pid}:${e.tid}`;
    if (e.ph === 'X' && e.dur !== undefined) {
      (byThread.get(key) ?? byThread.set(key, []).get(key)!).push({ name: e.name, ts: e.ts, dur: e.dur });
    } else if (e.ph === 'B') {
      (open.get(key) ?? open.set(key, []).get(key)!).push(e);
    } else if (e.ph === 'E') {
      const begin = open.get(key)?.pop();
      if (begin !== undefined) (byThread.get(key) ?? byThread.set(key, []).get(key)!).push({ name: begin.name, ts: begin.ts, dur: e.ts - begin.ts });
    } else {
      continue;
    }
    if (e.ts < first) first = e.ts;
    if (e.ts > last) last = e.ts;
  }
  const seconds = Math.max(1e-6, (last - first) / 1e6);
  const label = (key: string) => `${processNames.get(Number(key.split(':')[0])) ?? '?'}/${threadNames.get(key) ?? key.split(':')[1]}`;

  const threads: TraceSummary['threads'] = [];
  let rendererMain: TraceSummary['rendererMain'] = [];
  for (const [key, list] of byThread) {
    list.sort((a, b) => a.ts - b.ts || b.dur - a.dur);
    // Busy: the union of the outermost events.
    let busy = 0;
    let end = -Infinity;
    for (const e of list) {
      if (e.ts >= end) {
        busy += e.dur;
        end = e.ts + e.dur;
      } else if (e.ts + e.dur > end) {
        busy += e.ts + e.dur - end;
        end = e.ts + e.dur;
      }
    }
    threads.push({ thread: label(key), msPerSecond: busy / 1000 / seconds });
    if (threadNames.get(key) === 'CrRendererMain') {
      const self = new Map<string, number>();
      const stack: { name: string; end: number; children: number; dur: number }[] = [];
      const pop = () => {
        const done = stack.pop()!;
        self.set(done.name, (self.get(done.name) ?? 0) + Math.max(0, done.dur - done.children));
      };
      for (const e of list) {
        while (stack.length > 0 && stack.at(-1)!.end <= e.ts) pop();
        if (stack.length > 0) stack.at(-1)!.children += e.dur;
        stack.push({ name: e.name, end: e.ts + e.dur, children: 0, dur: e.dur });
      }
      while (stack.length > 0) pop();
      const mine = [...self].map(([name, us]) => ({ name, msPerSecond: us / 1000 / seconds }));
      rendererMain = [...rendererMain, ...mine];
    }
  }
  const merged = new Map<string, number>();
  for (const { name, msPerSecond } of rendererMain) merged.set(name, (merged.get(name) ?? 0) + msPerSecond);
  return {
    threads: threads.sort((a, b) => b.msPerSecond - a.msPerSecond),
    rendererMain: [...merged].map(([name, msPerSecond]) => ({ name, msPerSecond })).sort((a, b) => b.msPerSecond - a.msPerSecond),
    seconds,
  };
}
