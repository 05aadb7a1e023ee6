// `npm start` as an operator runs it: stdout carries only JSON log lines (what a log shipper
// reads), and the one human-readable text, the first admin key, goes to stderr.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { COMPILE_CACHE, tempDir, withTimeout } from './helpers/process.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

test('npm start: every stdout line is JSON, from start to a clean shutdown', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t);
  const child = spawn('npm', ['start'], {
    cwd: ROOT,
    env: {
      PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? '/usr/bin:/bin'}`, HOME: dir, ...COMPILE_CACHE,
      FLEET_DATABASE_URL: `sqlite:${path.join(dir, 'fleet.db')}`, FLEET_HOST: '127.0.0.1', FLEET_PORT: '0',
      FLEET_MQTT_PORT: '0', FLEET_OSMAND_PORT: '0', FLEET_TELTONIKA_PORT: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: a supervisor signals npm and the service alike, as this test does.
    detached: true,
  });
  const group = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // already gone
    }
  };
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  t.after(() => group('SIGKILL'));

  await withTimeout((async () => {
    while (!out.includes('empty store: created the first organization')) {
      if (child.exitCode !== null) throw new Error(`npm start exited: ${err}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })(), 30_000, 'the service to start under npm start');
  group('SIGTERM');
  // npm itself ends by the signal; the service's own clean exit is in its last log line.
  await withTimeout(closed, 15_000, 'npm start to exit');

  const lines = out.split('\n').filter((line) => line !== '');
  assert.ok(lines.length >= 3, out);
  for (const line of lines) assert.doesNotThrow(() => JSON.parse(line), `a stdout line that is not JSON: ${line}`);
  assert.ok(lines.some((line) => (JSON.parse(line) as { msg?: string }).msg === 'shut down cleanly'));
  assert.match(err, /First admin API key/, 'the first admin key is shown on stderr');
  assert.doesNotMatch(out, /fleet_[0-9A-Za-z]{38}/, 'and never on stdout');
});
