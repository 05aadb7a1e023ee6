// The OpenAPI document (docs/API.md "The OpenAPI document") passes Redocly's recommended rules and
// Spectral's `spectral:oas` without an error or a warning, names each shared schema once, and
// declares the headers the responses carry. The linters run as the command-line tools an
// integrator would run, on the document a freshly built app serves.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { SCOPES } from '../src/auth/scopes.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '..');
const REDOCLY = path.join(root, 'node_modules/@redocly/cli/bin/cli.js');
const SPECTRAL = path.join(root, 'node_modules/@stoplight/spectral-cli/dist/index.js');
const PUBLIC_URL = 'https://fleet.acme.test';

interface Response { $ref?: string; description?: string; headers?: Record<string, { $ref?: string }>; content?: Record<string, { schema?: unknown }> }
interface Parameter { in: string; name: string; example?: unknown; examples?: unknown }
interface Operation { responses: Record<string, Response>; parameters?: Parameter[]; security?: Array<Record<string, string[]>> }
interface Document {
  servers?: Array<{ url: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: {
    schemas: Record<string, Record<string, unknown>>;
    responses: Record<string, Response>;
    headers: Record<string, unknown>;
    securitySchemes: Record<string, { type: string; flows?: { clientCredentials?: { tokenUrl: string; scopes: Record<string, string> } } }>;
  };
}

let ctx: TestApp;
let dir: string;
let file: string;
let body: string;
let doc: Document;

before(async () => {
  ctx = await createTestApp({ env: { FLEET_PUBLIC_URL: PUBLIC_URL } });
  const res = await ctx.request('GET', '/openapi.json', { key: null });
  assert.equal(res.statusCode, 200);
  body = res.body;
  doc = res.json<Document>();
  dir = mkdtempSync(path.join(tmpdir(), 'fleet-openapi-'));
  file = path.join(dir, 'openapi.json');
  writeFileSync(file, body);
});
after(async () => {
  await ctx.close();
  rmSync(dir, { recursive: true, force: true });
});

interface RedoclyReport { totals: { errors: number; warnings: number }; problems: Array<{ ruleId: string; severity: string; message: string; location: Array<{ pointer: string }> }> }
interface SpectralResult { code: string; severity: number; message: string; path: string[] }

/** Runs a linter's CLI; they exit non-zero when they find errors, which is a report, not a failure to run. */
async function lint(args: string[]): Promise<string> {
  const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };
  try {
    return (await run(process.execPath, args, { cwd: root, env, maxBuffer: 64 * 1024 * 1024 })).stdout;
  } catch (error) {
    const { code, stdout } = error as { code?: unknown; stdout?: string };
    if (code === 1 && typeof stdout === 'string') return stdout;
    throw error;
  }
}

async function redocly(target: string): Promise<RedoclyReport> {
  return JSON.parse(await lint([REDOCLY, 'lint', '--config', path.join(root, 'redocly.yaml'), '--format', 'json', target])) as RedoclyReport;
}

async function spectral(target: string): Promise<SpectralResult[]> {
  const out = path.join(dir, `${path.basename(target)}.spectral.json`);
  await lint([SPECTRAL, 'lint', '--ruleset', path.join(root, '.spectral.yaml'), '--format', 'json', '--output', out, '--fail-severity', 'hint', target]);
  return JSON.parse(readFileSync(out, 'utf8')) as SpectralResult[];
}

const show = (lines: string[]) => lines.join('\n') || 'none';

test('Redocly (recommended rules) finds no error and no warning', { timeout: 120_000 }, async () => {
  const report = await redocly(file);
  const found = report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer ?? '?'}: ${p.message}`);
  assert.deepEqual({ errors: report.totals.errors, warnings: report.totals.warnings }, { errors: 0, warnings: 0 }, show(found));
});

test('Spectral (spectral:oas) finds no error and no warning', { timeout: 120_000 }, async () => {
  const results = await spectral(file);
  const found = results.filter((r) => r.severity <= 1).map((r) => `${r.severity === 0 ? 'error' : 'warning'} ${r.code} at ${r.path.join('.')}: ${r.message}`);
  assert.deepEqual(found, []);
});

test('the linters do report what they are here to catch', { timeout: 120_000 }, async () => {
  // The faults the document used to have: no servers, scopes on the bearer scheme, a response
  // without a description.
  const broken = JSON.parse(body) as Document & { servers?: unknown };
  delete broken.servers;
  const first = Object.values(Object.values(broken.paths).find((item) => item.get !== undefined && item.get.security?.length)!)[0]!;
  first.security = [{ bearer: ['fleet:read'] }];
  const brokenFile = path.join(dir, 'broken.json');
  writeFileSync(brokenFile, JSON.stringify(broken));
  const report = await redocly(brokenFile);
  assert.ok(report.problems.some((p) => p.ruleId === 'no-empty-servers'), show(report.problems.map((p) => p.ruleId)));
  const results = await spectral(brokenFile);
  assert.ok(results.some((r) => r.code === 'oas3-api-servers'), show(results.map((r) => r.code)));
});

test('shared schemas are named once under components.schemas and referenced', () => {
  const names = Object.keys(doc.components.schemas);
  for (const name of [
    'Problem', 'Vehicle', 'VehicleSummary', 'VehicleList', 'TelemetryRecord', 'LatestState', 'Event', 'EventPage', 'Webhook',
    'WebhookDelivery', 'Geofence', 'AlertRule', 'Alert', 'Trip', 'Stop', 'Aggregates', 'Device', 'ApiKey', 'OAuthClient', 'Stream',
  ]) assert.ok(names.includes(name), `components.schemas.${name} is missing; there are ${names.join(', ')}`);
  assert.ok(!names.some((name) => /^def-\d+$/.test(name)), `unnamed components: ${names.join(', ')}`);
  // The problem schema is written out once: every other mention is a reference.
  assert.equal(body.split('"Stable machine-readable code."').length - 1, 1, 'the problem schema is inlined somewhere');
  assert.ok(!body.includes('"$id"'), 'a schema id leaked into the document');
  // Every reference resolves.
  for (const [, kind, name] of body.matchAll(/"#\/components\/(\w+)\/([^"]+)"/g)) {
    const section = (doc.components as unknown as Record<string, Record<string, unknown>>)[kind!];
    assert.ok(section?.[name!] !== undefined, `#/components/${kind!}/${name!} does not resolve`);
  }
  // Inlining everything made a document of more than 1 MB (with fewer operations than today's).
  assert.ok(body.length < 400_000, `the document is ${body.length} bytes`);
});

test('servers and security schemes: the public URL, and OAuth client credentials with every scope', () => {
  assert.deepEqual(doc.servers?.map((s) => s.url), [PUBLIC_URL]);
  const { bearer, oauth2 } = doc.components.securitySchemes;
  assert.equal(bearer?.type, 'http');
  assert.equal(oauth2?.type, 'oauth2');
  assert.equal(oauth2?.flows?.clientCredentials?.tokenUrl, `${PUBLIC_URL}/oauth/token`);
  assert.deepEqual(Object.keys(oauth2?.flows?.clientCredentials?.scopes ?? {}).sort(), [...SCOPES].sort());
  for (const [scope, description] of Object.entries(oauth2.flows.clientCredentials.scopes)) {
    assert.ok(description.length > 10, `scope ${scope} is not described`);
  }
});

const operations = () => Object.entries(doc.paths).flatMap(([url, item]) => Object.entries(item).map(([method, op]) => ({ key: `${method.toUpperCase()} ${url}`, url, op })));
const resolve = (response: Response): Response =>
  response.$ref === undefined ? response : doc.components.responses[response.$ref.replace('#/components/responses/', '')]!;
const headersOf = (response: Response) => Object.keys(resolve(response).headers ?? {});

test('every response is described and declares the headers it carries, by reference', () => {
  for (const { key, url, op } of operations()) {
    for (const [status, given] of Object.entries(op.responses)) {
      const response = resolve(given);
      assert.ok(response.description !== undefined && response.description !== '' && response.description !== 'Default Response', `${key} ${status}: no description`);
      for (const [name, header] of Object.entries(response.headers ?? {})) {
        assert.equal(header.$ref, `#/components/headers/${name}`, `${key} ${status}: header ${name} is not a reference`);
      }
      const headers = headersOf(given);
      assert.ok(headers.includes('X-Request-Id'), `${key} ${status}: X-Request-Id`);
      if (status === '429') for (const name of ['RateLimit', 'RateLimit-Policy', 'Retry-After']) assert.ok(headers.includes(name), `${key} 429: ${name}`);
      if (status === '503') assert.ok(headers.includes('Retry-After'), `${key} 503: Retry-After`);
      if (url.startsWith('/api/v1/')) for (const name of ['Deprecation', 'Sunset', 'Link']) assert.ok(headers.includes(name), `${key} ${status}: ${name}`);
      else assert.ok(!headers.includes('Deprecation'), `${key} ${status} is not deprecated`);
    }
  }
});

test('a declared Location is the one the server sends', async () => {
  const created = operations().filter(({ op }) => op.responses['201'] !== undefined);
  assert.ok(created.length >= 8, `only ${created.length} operations answer 201`);
  const withLocation = created.filter(({ op }) => headersOf(op.responses['201']!).includes('Location')).map(({ key }) => key);
  assert.ok(withLocation.includes('POST /v2/fleet/vehicles'), withLocation.join(', '));
  // The server really sends it.
  const res = await ctx.request('POST', '/v2/fleet/vehicles', { body: { vehicleId: 'van-lint', type: 'van' } });
  assert.equal(res.statusCode, 201, res.body);
  assert.equal(res.headers.location, '/v2/fleet/vehicles/van-lint');
  assert.match(String(res.headers['x-request-id']), /.+/);
});

test('every path parameter has an example', () => {
  for (const { key, op } of operations()) {
    for (const parameter of op.parameters ?? []) {
      if (parameter.in !== 'path') continue;
      assert.ok(parameter.example !== undefined || parameter.examples !== undefined, `${key}: path parameter ${parameter.name} has no example`);
    }
  }
});
