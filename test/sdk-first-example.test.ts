// sdk/README.md's first program as a newcomer runs it: the package packed from a checkout
// (`npm pack ./sdk`), a new project (`npm init -y`, so CommonJS by default), the tarball installed
// there, the README's first ```js block saved under the name on its first line, and the README's
// command run with `node` against a service on a real port. The checkout is a copy of sdk/ beside a
// link to the repository's node_modules: packing swaps sdk/package.json for a while, and the
// working tree is not this test's to change. openapi-fetch comes from the npm cache or the
// registry; with neither, the test is skipped loudly, or fails under CI=true.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createStreamApp } from './helpers/streams.ts';
import { skipUnless } from './helpers/skip.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SDK = path.join(ROOT, 'sdk');
const README = readFileSync(path.join(SDK, 'README.md'), 'utf8');
const DEPENDENCIES = (JSON.parse(readFileSync(path.join(SDK, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies;

/**
 * npm's environment: this one without what `npm test` sets for its own scripts (npm_package_*,
 * npm_lifecycle_*, npm_config_local_prefix, …), which would have the new project's npm take it for
 * the repository; the cache, registry and user configuration stay, as in the reader's shell.
 */
const NPM_ENV: NodeJS.ProcessEnv = {
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) =>
    (!name.startsWith('npm_') || ['npm_config_cache', 'npm_config_registry', 'npm_config_userconfig'].includes(name))
    && name !== 'INIT_CWD' && name !== 'NODE_TEST_CONTEXT')),
  npm_config_update_notifier: 'false',
};

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (killed after `timeoutMs`), with its output. */
function run(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'], timeout: options.timeoutMs ?? 60_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function succeeded(ran: Ran, what: string): Ran {
  assert.equal(ran.code, 0, `${what} exited ${ran.code}\n--- stdout:\n${ran.stdout}\n--- stderr:\n${ran.stderr}`);
  return ran;
}

/** Whether npm can get the SDK's dependencies (from its cache first): undefined when it can. */
function registryMissing(): string | undefined {
  for (const [name, range] of Object.entries(DEPENDENCIES)) {
    const looked = spawnSync('npm', ['view', `${name}@${range}`, 'version', '--prefer-offline', '--fetch-retries=0', '--fetch-timeout=10000', '--loglevel=error'], { cwd: tmpdir(), env: NPM_ENV, encoding: 'utf8', timeout: 30_000 });
    if (looked.status !== 0) return `out of reach (npm view ${name}@${range}: ${(looked.stderr || String(looked.error ?? looked.status)).trim().split('\n')[0]})`;
  }
  return undefined;
}

const skip = skipUnless(registryMissing(), 'The npm registry (for the SDK\'s dependencies)', 'the SDK first-program test',
  'Reach the npm registry, or fill the npm cache with `npm ci`');

/** The README's code blocks, in order. */
const blocks = [...README.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map(([, lang, code]) => ({ lang: lang ?? '', code: code ?? '' }));

test('the README\'s first program runs as written in a new npm project', { skip, timeout: 180_000 }, async (t) => {
  // What the README has the reader do.
  const program = blocks.find((block) => block.lang !== 'sh');
  assert.equal(program?.lang, 'js', 'the first example is JavaScript, for plain Node');
  const name = /^\/\/ (\S+)\n/.exec(program.code)?.[1] ?? '';
  assert.ok(name.endsWith('.mjs'), `its first line names a .mjs file (an ES module in any project), not "${name}"`);
  const shell = blocks.filter((block) => block.lang === 'sh').map((block) => block.code).join('');
  const tarball = /^npm install \/path\/to\/fleet\/(\S+\.tgz)$/m.exec(shell)?.[1];
  assert.ok(tarball !== undefined, 'the README installs a tarball from the checkout');
  assert.ok(/^npm pack \.\/sdk\b/m.test(shell), 'the README packs sdk/ with npm pack ./sdk');
  assert.ok(README.includes('npm init -y'), 'the README starts a project with npm init -y');
  const command = new RegExp(`^((?:[A-Z_]+=\\S+ )*)node ${name.replace('.', '\\.')}$`, 'm').exec(shell);
  assert.ok(command !== null, `the README runs it: node ${name}`);
  const variables = [...(command[1] ?? '').matchAll(/([A-Z_]+)=/g)].map((match) => match[1]);
  assert.deepEqual(variables, ['FLEET_URL', 'FLEET_KEY'], 'the variables the command sets, which the test gives its own values');

  const dir = mkdtempSync(path.join(tmpdir(), 'fleet-sdk-first-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));

  // The checkout: sdk/ as it is in the repository, and the node_modules of `npm install` there.
  const checkout = path.join(dir, 'fleet');
  cpSync(SDK, path.join(checkout, 'sdk'), {
    recursive: true,
    filter: (source) => !['dist', '.packing', 'node_modules'].includes(path.basename(source)),
  });
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(checkout, 'node_modules'));
  succeeded(await run('npm', ['pack', './sdk'], { cwd: checkout, env: NPM_ENV }), 'npm pack ./sdk');
  assert.ok(existsSync(path.join(checkout, tarball)), `npm pack wrote ${tarball}, the tarball the README installs`);
  assert.equal(readFileSync(path.join(checkout, 'sdk', 'package.json'), 'utf8'), readFileSync(path.join(SDK, 'package.json'), 'utf8'),
    'after packing, the checkout\'s package.json is what it was');
  assert.ok(!existsSync(path.join(checkout, 'sdk', 'dist')), 'and dist/ is gone');

  // The new project.
  const project = path.join(dir, 'project');
  mkdirSync(project);
  succeeded(await run('npm', ['init', '-y'], { cwd: project, env: NPM_ENV }), 'npm init -y');
  assert.equal((JSON.parse(readFileSync(path.join(project, 'package.json'), 'utf8')) as { type?: string }).type ?? 'commonjs', 'commonjs');
  succeeded(await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', path.join(checkout, tarball)], { cwd: project, env: NPM_ENV }),
    `npm install ${tarball}`);
  writeFileSync(path.join(project, name), program.code);

  // A service with two vehicles, one of them sending.
  const service = await createStreamApp();
  t.after(() => service.close());
  const call = async (pathname: string, body: unknown) => {
    const res = await fetch(service.publicUrl + pathname, {
      method: 'POST',
      headers: { authorization: `Bearer ${service.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    assert.ok(res.ok, `${pathname}: ${res.status} ${await res.text()}`);
  };
  await call('/v2/fleet/vehicles', { vehicleId: 'van-042', type: 'van' });
  await call('/v2/fleet/vehicles', { vehicleId: 'truck-7', type: 'truck' });
  await call('/v2/telemetry/van-042', { timestamp: new Date().toISOString(), data: { battery: 76 } });

  // `FLEET_URL=… FLEET_KEY=… node example.mjs`, with nothing else from this process's environment.
  const ran = succeeded(await run(process.execPath, [name], {
    cwd: project,
    env: { PATH: process.env.PATH, HOME: project, FLEET_URL: service.publicUrl, FLEET_KEY: service.adminKey },
    timeoutMs: 30_000,
  }), `node ${name}`);
  assert.equal(ran.stderr, '', 'no warning either');
  const [count, ...vehicles] = ran.stdout.trimEnd().split('\n');
  assert.equal(count, '2 vehicles');
  assert.deepEqual(vehicles.sort(), ['truck-7 registered null', 'van-042 active 76']);
});
