// Numbers in query strings (docs/API.md "Errors"): a query or path value declared as an integer or
// a number is read as plain decimal text only. `Infinity`, `1e309` (which overflows to Infinity),
// hexadecimal, exponents and padded values answer 400, never a 500 from the store. The routes and
// their parameters are read from the OpenAPI document, so a parameter added later is covered.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestApp } from './helpers/app.ts';

let ctx: TestApp;
before(async () => {
  ctx = await createTestApp();
});
after(async () => {
  await ctx.close();
});

interface NumericParameter {
  method: string;
  path: string;
  name: string;
  in: 'query' | 'path';
  type: 'integer' | 'number';
  /** The path with a plausible value for each of its path parameters (its example, when given). */
  url: string;
}

/** Every integer or number parameter of every operation in /openapi.json. */
async function numericParameters(): Promise<NumericParameter[]> {
  const res = await ctx.request('GET', '/openapi.json', { key: null });
  assert.equal(res.statusCode, 200);
  const doc = res.json<{ paths: Record<string, Record<string, { parameters?: Array<{ name: string; in: string; required?: boolean; example?: unknown; schema?: { type?: string; examples?: unknown[] } }> }>> }>();
  const found: NumericParameter[] = [];
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      let url = path;
      // Required query parameters (a range's from and to) get their examples, so that only the
      // parameter under test can be what a request is refused for.
      const required: string[] = [];
      for (const parameter of operation.parameters ?? []) {
        const example = parameter.example ?? parameter.schema?.examples?.[0];
        if (parameter.in === 'path') url = url.replace(`{${parameter.name}}`, typeof example === 'string' ? example : 'probe-1');
        if (parameter.in === 'query' && parameter.required === true) required.push(`${parameter.name}=${encodeURIComponent(String(example))}`);
      }
      const withRequired = (except: string) => {
        const others = required.filter((pair) => !pair.startsWith(`${except}=`));
        return others.length > 0 ? `${url}?${others.join('&')}` : url;
      };
      for (const parameter of operation.parameters ?? []) {
        const type = parameter.schema?.type;
        if ((type === 'integer' || type === 'number') && (parameter.in === 'query' || parameter.in === 'path')) {
          found.push({ method: method.toUpperCase(), path, name: parameter.name, in: parameter.in, type, url: withRequired(parameter.name) });
        }
      }
    }
  }
  return found;
}

const NOT_DECIMAL = ['Infinity', '-Infinity', '1e309', '-1e309', 'NaN', '0x10', '0b1', '0o7', '1e3', '1.5e2', ' 5', '5 ', '+5', '', '1_000'];
const NOT_INTEGER = ['1.0', '1.5'];

describe('numeric query parameters', () => {
  test('the document names the paged lists\' limit and offset and the stream attach\'s lastSeq', async () => {
    const names = new Set((await numericParameters()).map((p) => `${p.method} ${p.path} ${p.name}`));
    for (const expected of [
      'GET /v2/fleet/vehicles limit', 'GET /v2/fleet/vehicles offset', 'GET /v2/api-keys limit',
      'GET /v2/telemetry/{vehicleId}/history limit', 'GET /v2/streams/{streamId} lastSeq',
    ]) {
      assert.ok(names.has(expected), `${expected} is in the OpenAPI document (found: ${[...names].join(', ')})`);
    }
  });

  test('every one answers 400 validation-failed, naming the parameter, for values that are not decimal integers', async (t) => {
    for (const parameter of await numericParameters()) {
      await t.test(`${parameter.method} ${parameter.path} ${parameter.name}`, async () => {
        const bad = parameter.type === 'integer' ? [...NOT_DECIMAL, ...NOT_INTEGER] : NOT_DECIMAL;
        for (const value of bad) {
          const url = `${parameter.url}${parameter.url.includes('?') ? '&' : '?'}${parameter.name}=${encodeURIComponent(value)}`;
          const res = await ctx.request(parameter.method, url);
          assert.equal(res.statusCode, 400, `${url}: ${res.statusCode} ${res.body.slice(0, 300)}`);
          const problem = res.json<{ code: string; errors: Array<{ in: string; path: string }> }>();
          assert.equal(problem.code, 'validation-failed', url);
          assert.ok(problem.errors.some((e) => e.in === 'query' && e.path === `/${parameter.name}`), `${url}: ${res.body}`);
        }
        // A plain decimal value passes validation (whatever the route then answers).
        const good = await ctx.request(parameter.method, `${parameter.url}${parameter.url.includes('?') ? '&' : '?'}${parameter.name}=1`);
        // Read as a number: a 400 may still come from what the number means (1-second buckets over a
        // day are too many), never from its form.
        assert.doesNotMatch(good.statusCode === 400 ? good.body : '', /must be (integer|number)/, `${parameter.name}=1: ${good.body.slice(0, 300)}`);
        assert.notEqual(good.statusCode, 500, `${parameter.name}=1: ${good.body.slice(0, 300)}`);
      });
    }
  });

  test('a plain decimal value is read as its number', async () => {
    await ctx.registerVehicle('num-1');
    const res = await ctx.request('GET', '/v2/fleet/vehicles?limit=0010&offset=0');
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().limit, 10);
    const negative = await ctx.request('GET', '/v2/fleet/vehicles?offset=-1');
    assert.equal(negative.statusCode, 400, 'a negative offset is out of range');
  });

  test('a number written out past the safe range is refused as out of range, not rounded', async () => {
    const res = await ctx.request('GET', `/v2/fleet/vehicles?offset=${'9'.repeat(400)}`);
    assert.equal(res.statusCode, 400, res.body);
  });
});

describe('numbers in JSON bodies', () => {
  test('1e309 (Infinity once parsed) is not a number a body may carry', async () => {
    await ctx.registerVehicle('num-body');
    const res = await ctx.request('POST', '/v2/telemetry/num-body', {
      body: `{"timestamp":"${new Date(Date.now() - 1000).toISOString()}","data":{"speed":1,"diagnostics":{"coolant":1e309}}}`,
    });
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(res.json().code, 'validation-failed');
    const odometer = await ctx.request('POST', '/v2/telemetry/num-body', {
      body: `{"timestamp":"${new Date(Date.now() - 2000).toISOString()}","data":{"odometer":1e309}}`,
    });
    assert.equal(odometer.statusCode, 400, odometer.body);
  });
});
