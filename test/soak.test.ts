// The soak (bench/soak.ts, `npm run soak`) for one minute on the embedded store: a real service
// process under mixed load at 70 % of its measured capacity. One run, two verdicts: everything but
// the memory check must pass; the whole soak passing is marked todo (reported, not failing the
// suite), because one minute is too short for this service's memory to level off: 12 s into a
// fresh process its live heap and RSS still grow by 15 to 30 % while the JIT, connection pools, the
// replay log and the store's page cache fill, although nothing leaks. The 10-minute runs pass it
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
  child = spawn(process.execPath, [SOAK, '--minutes', '1'], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  exited = new Promise<number | null>((resolve) => child!.once('close', (code) => resolve(code)));
  const code = await withTimeout(exited, 140_000, 'the soak to finish');
  run = { code, output };
}), { timeout: 300_000 });

after(async () => {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  // SIGINT lets the soak stop its service process and remove its files; SIGKILL if it cannot.
  child.kill('SIGINT');
  const timer = setTimeout(() => child!.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
});

test('one minute of mixed load: every acknowledged record stored once, no 5xx, nothing failed but the memory check', () => {
  const { output } = run;
  assert.match(output, /Records: \d+ sent, (\d+) acknowledged, \d+ stored; \1 of the acknowledged stored exactly once, 0 missing, 0 stored twice, 0 never sent/, output);
  assert.match(output, /Requests answered 5xx: 0 seen by the clients, 0 counted by the nodes; other failures: 0 refused, 0 unanswered/, output);
  const failures = output.split('\n').filter((line) => line.startsWith('  - '));
  const others = failures.filter((line) => !/resident memory grew|heap kept after full collections grew/.test(line));
  assert.deepEqual(others, [], output);
  assert.ok(run.code === 0 || failures.length > 0, output);
});

test('one minute of mixed load passes the soak, memory included', { todo: 'memory does not level off within 12 s of a fresh process' }, () => {
  assert.equal(run.code, 0, run.output);
  assert.match(run.output, /^PASSED/m, run.output);
});
