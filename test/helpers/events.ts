// A validator of the OpenAPI document's `Event`, made from the document the app serves, as a
// receiver of webhooks or the feed would make it.
import assert from 'node:assert/strict';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { TestApp } from './app.ts';

export async function eventValidator(ctx: Pick<TestApp, 'request'>) {
  const doc = (await ctx.request('GET', '/openapi.json', { key: null })).json<{ components: { schemas: Record<string, object> } }>();
  // `oneOf` alone tells the variants apart (Ajv does not read the discriminator's mapping).
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema({ $id: 'doc', components: doc.components });
  const validate = ajv.getSchema('doc#/components/schemas/Event');
  assert.ok(validate !== undefined);
  return validate;
}

/**
 * The feed's events for `query` (e.g. `types=a,b`), every page. On PostgreSQL the feed shows an
 * event once every transaction older than it has ended, and other suites' transactions run on the
 * same server: it is read again until at least `atLeast` are there (15 s at most), so a test
 * asserts on all it expects, and then on their number.
 */
export async function feedEvents<T>(ctx: Pick<TestApp, 'request'>, query: string, atLeast: number): Promise<T[]> {
  for (const deadline = Date.now() + 15_000; ;) {
    const events: T[] = [];
    for (let after = ''; ;) {
      const res = await ctx.request('GET', `/v2/events?limit=1000&${query}${after}`);
      assert.equal(res.statusCode, 200, res.body);
      const page = res.json<{ events: T[]; next: string }>();
      events.push(...page.events);
      if (page.events.length === 0) break;
      after = `&after=${encodeURIComponent(page.next)}`;
    }
    if (events.length >= atLeast || Date.now() > deadline) return events;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
