// The first start as a new operator meets it (README "Quick start"): a first start that cannot
// serve makes nothing, so the next start is a first start again and prints the key; a port in use
// is one line naming the variable that moves it; and a lost admin key has a way back
// (`npm run key -- --admin`, docs/OPERATIONS.md).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { COMPILE_CACHE, printedKeys, request, spawnFleet, startFleet, tempDir, withTimeout } from './helpers/process.ts';

const NEW_KEY = fileURLToPath(new URL('../src/cli/new-key.ts', import.meta.url));
const NEW_USER = fileURLToPath(new URL('../src/cli/new-user.ts', import.meta.url));
const TIMEOUT = 90_000;

/** `node src/cli/new-key.ts ...args` (or another command) in `cwd` with `env`: its exit code and output. */
function runKey(cwd: string, args: string[], env: Record<string, string> = {}, script = NEW_KEY) {
  const child = spawn(process.execPath, [script, ...args], { cwd, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: cwd, ...COMPILE_CACHE, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return withTimeout(new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  }), 30_000, `new-key ${args.join(' ')}`);
}

describe('the first start', { concurrency: 2 }, () => {
  test('a port in use: one line, nothing made; the next start is a first start and prints the key', { timeout: TIMEOUT }, async (t) => {
    const cwd = tempDir(t);
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    t.after(() => holder.close());
    const taken = (holder.address() as net.AddressInfo).port;

    const failed = spawnFleet(t, { cwd, env: { FLEET_HOST: '127.0.0.1', FLEET_PORT: String(taken), FLEET_MQTT_PORT: '0', FLEET_OSMAND_PORT: '0', FLEET_TELTONIKA_PORT: '0' } });
    const exit = await withTimeout(failed.closed, 30_000, 'the failed start to exit');
    assert.equal(exit.code, 1);
    assert.equal(failed.stderr(), `fleet: cannot start: 127.0.0.1:${taken} is already in use by another process (FLEET_PORT sets another port; 0 picks a free one)\n`);
    assert.deepEqual(printedKeys(failed.stderr()), []);

    const next = await startFleet(t, { cwd });
    await next.waitFor(() => printedKeys(next.stderr()).length > 0, 'the first admin key on stderr', 10_000);
    const [key] = printedKeys(next.stderr());
    const res = await request(next, 'GET', '/v2/fleet/vehicles', { key });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    assert.deepEqual((await next.stop('SIGTERM')).code, 0);
  });

  test('npm run key -- --admin: a new admin key of the existing store, printed once; --help and bad options print no key', { timeout: TIMEOUT }, async (t) => {
    const cwd = tempDir(t);
    const env = { FLEET_DATABASE_URL: `sqlite:${path.join(cwd, 'fleet.db')}` };

    const empty = await runKey(cwd, ['--admin'], env);
    assert.equal(empty.code, 1);
    assert.match(empty.stderr, /no organization yet: start the service once/);

    const first = await startFleet(t, { cwd, env });
    await first.waitFor(() => printedKeys(first.stderr()).length > 0, 'the first admin key', 10_000);
    const busy = await runKey(cwd, ['--admin'], env);
    assert.equal(busy.code, 1, 'the embedded store is the running service\'s');
    assert.match(busy.stderr, /in use by another process/);
    assert.equal((await first.stop('SIGTERM')).code, 0);

    const made = await runKey(cwd, ['--admin', '--name', 'regained'], env);
    assert.equal(made.code, 0, made.stderr);
    const key = made.stdout.trim();
    assert.deepEqual(printedKeys(made.stdout), [key], 'stdout is the key alone');
    assert.match(made.stderr, /shown once/);

    // npm run user: an invitation link from the same store, the service stopped; bad options refused.
    assert.equal((await runKey(cwd, ['--email', 'first@example.com', '--role', 'owner'], env, NEW_USER)).code, 2);
    const invited = await runKey(cwd, ['--email', 'first@example.com', '--role', 'admin'], env, NEW_USER);
    assert.equal(invited.code, 0, invited.stderr);
    const link = invited.stdout.trim();
    assert.match(link, /^http:\/\/localhost:8080\/#\/invitation\?token=[A-Za-z0-9_-]+$/, 'stdout is the link alone');
    assert.match(invited.stderr, /as admin of/);

    const again = await startFleet(t, { cwd, env });
    const accepted = await request(again, 'POST', '/auth/invitations/accept', { body: { token: new URL(link).hash.split('token=')[1], password: 'the first admin\'s passphrase' } });
    assert.equal(accepted.status, 200, await accepted.clone().text());
    assert.equal(((await accepted.json()) as { user: { role: string } }).user.role, 'admin');
    const listed = await request(again, 'GET', '/v2/api-keys', { key });
    assert.equal(listed.status, 200, 'the new key is an admin key');
    const names = ((await listed.json()) as { apiKeys: { name: string }[] }).apiKeys.map((k) => k.name);
    assert.ok(names.includes('regained'), names.join(', '));
    assert.equal((await again.stop('SIGTERM')).code, 0);

    const help = await runKey(cwd, ['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage:/);
    assert.deepEqual(printedKeys(help.stdout + help.stderr), []);
    const bad = await runKey(cwd, ['--admn']);
    assert.equal(bad.code, 2);
    assert.deepEqual(printedKeys(bad.stdout + bad.stderr), []);
  });
});
