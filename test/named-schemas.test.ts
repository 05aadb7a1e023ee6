// Named schemas (src/schema/named.ts): defined once, used as references by the validator, the
// response serializer and the OpenAPI document alike.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Type } from 'typebox';
import { Problem } from '../src/schema/common.ts';
import { inlineNamed, named, namedSchemas } from '../src/schema/named.ts';
import { serializerCompiler } from '../src/schema/serializer.ts';
import { compileDataValidator } from '../src/schema/validation.ts';
import { Location, VehicleDetails } from '../src/vehicles/schema.ts';

test('a named schema is a reference to its name, defined once with that $id', () => {
  assert.deepEqual({ ...Location }, { $ref: 'Location' });
  const definition = namedSchemas().find((schema) => schema.$id === 'Location');
  assert.equal(definition?.type, 'object');
  assert.throws(() => named('Location', Type.String()), /named twice/);
  assert.throws(() => named('not-pascal', Type.String()), /PascalCase/);
});

test('the validator follows the references', () => {
  const valid = compileDataValidator<unknown>(Type.Object({ at: Location }));
  assert.equal(valid({ at: { lat: 52.52, lng: 13.405 } }), true);
  assert.equal(valid({ at: { lat: 91, lng: 13.405 } }), false);
  assert.equal(valid({ at: { lat: 52.52, lng: 13.405, alt: 30 } }), false, 'unknown properties stay errors through a reference');
});

test('the serializer writes the named schemas out in place: no field a schema does not name leaks', () => {
  const inlined = JSON.stringify(inlineNamed(Type.Object({ problem: Problem })));
  assert.ok(!inlined.includes('$ref') && !inlined.includes('$id'), inlined.slice(0, 200));
  const serialize = serializerCompiler({ schema: VehicleDetails, method: 'GET', url: '/x', httpStatus: '200' }) as (value: unknown) => string;
  const vehicle = {
    id: 'van-042', type: 'van', name: null, status: 'active', location: { lat: 1, lng: 2 }, battery: null, lastUpdate: null, groupIds: [],
    configuration: { capacity: 8, internal: 'x' }, createdAt: '2026-11-22T08:30:00.000Z', updatedAt: '2026-11-22T08:30:00.000Z', statusChangedAt: '2026-11-22T08:30:00.000Z',
    driverId: null, organizationId: 'org_hidden',
  };
  const out = JSON.parse(serialize(vehicle)) as Record<string, unknown>;
  assert.equal(out.organizationId, undefined);
  assert.deepEqual(out.location, { lat: 1, lng: 2 });
  assert.deepEqual(out.configuration, { capacity: 8 });
  assert.equal(out.id, 'van-042');
});
