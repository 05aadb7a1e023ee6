// The soak (bench/soak.ts, `npm run soak`) on the embedded store: a real service process under
// mixed load at 70 % of its measured capacity, one minute judged after a minute and a half of warm-up. One
// run, two verdicts. Required: every check but resident memory, the live heap (heap kept after
// full collections) included: a fresh process's memory grows for about its first minute (the JIT,
// V8 sizing its heap, connection pools, the replay log, the store's page cache), which the warm-up
// leaves out. Reported as a todo: the whole soak passing, resident memory included. In a run this
// short RSS still moves in steps as V8 enlarges its heap for the allocation rate (+7 % in one run,
// +14 % in another, with the live heap flat or shrinking); the 10-minute and longer runs judge it
// (docs/BENCHMARKS.md, "Soak").
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { underMachineLoadLock } from './helpers/exclusive.ts';
import { withTimeout } from './helpers/process.ts';

const SOAK = fileURLToPath(new URL('../bench/soak.ts', import.meta.url));

let run: { code: number | null; output: string };
let child: ReturnType<typeof spawn> | undefined;
let exited: Promise<number | null> | undefined;

before(() => underMachineLoadLock(async () => {
  // Nothing from the caller's environment but PATH: the soak builds the service's environment itself.
  child = spawn(process.execPath, [SOAK, '--minutes', '1', '--warm-up', '90'], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  exited = new Promise<number | null>((resolve) => child!.once('close', (code) => resolve(code)));
  const code = await withTimeout(exited, 240_000, 'the soak to finish');
  run = { code, output };
}), { timeout: 400_000 });

after(async () => {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  // SIGINT lets the soak stop its service process and remove its files; SIGKILL if it cannot.
  child.kill('SIGINT');
  const timer = setTimeout(() => child!.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
});

test('a minute of mixed load after 90 s of warm-up: every acknowledged record stored once, no 5xx, live heap flat', () => {
  const { output } = run;
  assert.match(output, /Records: \d+ sent, (\d+) acknowledged, \d+ stored; \1 of the acknowledged stored exactly once, 0 missing, 0 stored twice, 0 never sent/, output);
  assert.match(output, /Requests answered 5xx: 0 seen by the clients, 0 counted by the nodes; other failures: 0 refused, 0 unanswered/, output);
  const failures = output.split('\n').filter((line) => line.startsWith('  - '));
  const others = failures.filter((line) => !/resident memory grew/.test(line));
  assert.deepEqual(others, [], output);
  assert.ok(run.code === 0 || failures.length > 0, output);
});

test('a minute of mixed load after 90 s of warm-up passes the soak, resident memory included', { todo: 'RSS moves in steps while V8 sizes its heap in a run this short' }, () => {
  assert.equal(run.code, 0, run.output);
  assert.match(run.output, /^PASSED/m, run.output);
});
