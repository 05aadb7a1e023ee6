// Scoped credentials on every route that names one vehicle (docs/API.md "Scoped credentials"): a
// route whose path holds `:vehicleId`, or a vehicle's own `/v2/fleet/vehicles/:id` and
// `/api/v1/vehicles/:id` paths, answers 404 `vehicle-not-found` to a credential limited to groups
// when the vehicle is in none of them, exactly as it answers for another organization's vehicle.
// The check runs after validation (a malformed request answers 400 first, as it would for any
// vehicle) and before the handler; a credential of the whole organization skips it. Derived from
// the path, so a new route cannot forget it.
import type { FastifyInstance, FastifyRequest, preHandlerHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import { type VehicleScope, vehicleNotFound } from '../groups/scope.ts';

const VEHICLE_ID_PATH = /^\/(?:v2\/fleet\/vehicles|api\/v1\/vehicles)\/:id(?:\/|$)/;

/** The path parameter that names the route's vehicle, if it has one. */
export function vehicleParamOf(url: string): string | undefined {
  if (url.includes(':vehicleId')) return 'vehicleId';
  if (VEHICLE_ID_PATH.test(url)) return 'id';
  return undefined;
}

export const vehicleScopePlugin = fp(async function vehicleScope(app: FastifyInstance, opts: { scope: VehicleScope }) {
  app.addHook('onRoute', (route) => {
    const param = vehicleParamOf(route.url);
    if (param === undefined) return;
    const check: preHandlerHookHandler = function (request: FastifyRequest, _reply, done) {
      const who = request.principal;
      if (who === null || who.groupIds === undefined) return done();
      const vehicleId = (request.params as Record<string, string | undefined>)[param];
      if (vehicleId === undefined) return done();
      // The embedded store answers at once: no promise on the hot path of a scoped read.
      const seen = opts.scope.seesNow(who, vehicleId);
      if (seen === true) return done();
      if (seen === false) return done(vehicleNotFound(vehicleId));
      opts.scope.assertSees(who, [vehicleId]).then(() => done(), done);
    };
    route.preHandler = route.preHandler === undefined ? [check] : [check, ...[route.preHandler].flat()];
  });
}, { name: 'vehicle-scope', dependencies: ['auth'] });
