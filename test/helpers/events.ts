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
