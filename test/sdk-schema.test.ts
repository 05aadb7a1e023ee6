// The SDK's generated types (sdk/src/schema.d.ts) are those of the document the service serves:
// the checked-in file must be what `npm run sdk:generate` writes now, so a route schema changed
// without generating again fails here.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { SCHEMA_FILE, generateSchema, openApiDocument } from '../sdk/scripts/generate.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';

let ctx: TestApp;
before(async () => {
  ctx = await createTestApp();
});
after(() => ctx.close());

test('the generator reads the very document GET /openapi.json serves', async () => {
  const served = await ctx.request('GET', '/openapi.json', { key: null });
  assert.equal(served.statusCode, 200);
  assert.deepEqual(await openApiDocument(), served.json());
});

test('sdk/src/schema.d.ts is up to date (npm run sdk:generate)', async () => {
  const expected = await generateSchema();
  const actual = readFileSync(SCHEMA_FILE, 'utf8');
  if (actual !== expected) {
    const a = actual.split('\n');
    const e = expected.split('\n');
    const line = a.findIndex((text, i) => text !== e[i]);
    assert.fail(`${SCHEMA_FILE} differs from the current document from line ${line + 1}: run npm run sdk:generate`);
  }
  // Every served path is typed.
  for (const path of ['/v2/fleet/vehicles', '/v2/events', '/v2/streams/{streamId}/tickets', '/v2/webhooks/{id}/deliveries']) {
    assert.ok(actual.includes(`"${path}": {`), path);
  }
});
