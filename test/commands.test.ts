// Commands through the API on both stores (docs/API.md "Commands"): what a request may ask, what
// each refusal answers, the list and its pages, cancellation, the sweep of expired commands, and
// OsmAnd's way back (a queued command's text as the answer to the device's next request).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { manualClock } from './helpers/clock.ts';
import { skipUnlessPostgres } from './helpers/postgres.ts';
import { feedEvents } from './helpers/events.ts';

const skipPostgres = await skipUnlessPostgres();

type Command = { id: string; status: string; channel: string; type: string; expiresAt: string; createdAt: string; createdBy: { type: string; id: string } };

async function post(ctx: TestApp, vehicleId: string, body: unknown, key?: string) {
  return ctx.request('POST', `/v2/fleet/vehicles/${vehicleId}/commands`, { body, ...(key === undefined ? {} : { key }) });
}
function problem(res: { statusCode: number; body: string; json<T>(): T }, status: number, code: string, path?: string) {
  assert.equal(res.statusCode, status, res.body);
  const body = res.json<{ type: string; errors?: Array<{ path: string }> }>();
  assert.match(body.type, new RegExp(`${code}$`), res.body);
  if (path !== undefined) assert.ok(body.errors?.some((e) => e.path === path), res.body);
}

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`commands on ${backend}`, { skip: backend === 'postgres' && skipPostgres }, () => {
    test('what a command may be: types per channel, params per type, expiry bounds; refusals keep nothing', async () => {
      const ctx = await createTestApp({ backend });
      try {
        await ctx.registerVehicle('van-1');
        // No device: MQTT, which carries every type.
        assert.deepEqual((await ctx.request('GET', '/v2/fleet/vehicles/van-1/command-types')).json(), {
          channel: 'mqtt', types: ['custom', 'engineStop', 'engineResume', 'positionSingle', 'reboot', 'outputControl'],
        });
        await ctx.request('POST', '/v2/devices', { body: { protocol: 'osmand', identifier: 'phone-1', vehicleId: 'van-1' } });
        assert.deepEqual((await ctx.request('GET', '/v2/fleet/vehicles/van-1/command-types')).json(), { channel: 'osmand', types: ['custom'] });
        problem(await post(ctx, 'van-1', { type: 'engineStop' }), 400, 'validation-failed', '/type');
        problem(await post(ctx, 'van-1', { type: 'custom' }), 400, 'validation-failed', '/params');
        problem(await post(ctx, 'van-1', { type: 'custom', params: { text: 'x', output: 1 } }), 400, 'validation-failed', '/params');
        problem(await post(ctx, 'van-1', { type: 'custom', params: { text: '' } }), 400, 'validation-failed');
        problem(await post(ctx, 'van-1', { type: 'custom', params: { text: 'x'.repeat(513) } }), 400, 'validation-failed');
        problem(await post(ctx, 'van-1', { type: 'custom', params: { text: 'tab\there' } }), 400, 'validation-failed');
        problem(await post(ctx, 'van-1', { type: 'reboot', channel: 'mqtt', params: { text: 'x' } }), 400, 'validation-failed', '/params');
        problem(await post(ctx, 'van-1', { type: 'outputControl', channel: 'mqtt', params: { output: 5, on: true } }), 400, 'validation-failed');
        problem(await post(ctx, 'van-1', { type: 'outputControl', channel: 'mqtt', params: { output: 1 } }), 400, 'validation-failed', '/params');
        problem(await post(ctx, 'van-1', { type: 'engineStop', channel: 'mqtt', expiresInSeconds: 3601 }), 400, 'validation-failed', '/expiresInSeconds');
        problem(await post(ctx, 'van-1', { type: 'reboot', channel: 'mqtt', expiresInSeconds: 9 }), 400, 'validation-failed');
        problem(await post(ctx, 'van-1', { type: 'reboot', channel: 'sms' }), 400, 'validation-failed');
        problem(await post(ctx, 'van-1', { type: 'reboot', channel: 'mqtt', extra: 1 }), 400, 'validation-failed');
        problem(await post(ctx, 'nope', { type: 'reboot' }), 404, 'vehicle-not-found');
        assert.deepEqual((await ctx.request('GET', '/v2/fleet/vehicles/van-1/commands')).json(), { commands: [], nextCursor: null });

        const made = await post(ctx, 'van-1', { type: 'engineStop', channel: 'mqtt' });
        assert.equal(made.statusCode, 202, made.body);
        const command = made.json<Command>();
        assert.equal(made.headers.location, `/v2/commands/${command.id}`);
        assert.equal(command.status, 'queued');
        assert.equal(Date.parse(command.expiresAt) - Date.parse(command.createdAt), 300_000, 'engineStop expires after 300 s by default');
        assert.equal(command.createdBy.type, 'apiKey');
        const other = (await post(ctx, 'van-1', { type: 'custom', params: { text: 'getinfo' }, expiresInSeconds: 604_800 })).json<Command>();
        assert.equal(other.channel, 'osmand');

        await ctx.request('PUT', '/v2/fleet/vehicles/van-1/status', { body: { status: 'retired' } });
        problem(await post(ctx, 'van-1', { type: 'reboot', channel: 'mqtt' }), 409, 'vehicle-retired');
      } finally {
        await ctx.close();
      }
    });

    test('a vehicle holds at most 100 unfinished commands; cancelling one makes room; the list pages newest first and filters by status', async () => {
      const ctx = await createTestApp({ backend });
      try {
        await ctx.registerVehicle('van-2');
        const ids: string[] = [];
        for (let i = 0; i < 100; i++) {
          const res = await post(ctx, 'van-2', { type: 'custom', params: { text: `c${i}` } });
          assert.equal(res.statusCode, 202, res.body);
          ids.push(res.json<Command>().id);
        }
        problem(await post(ctx, 'van-2', { type: 'reboot' }), 409, 'command-queue-full');
        const cancelled = await ctx.request('DELETE', `/v2/commands/${ids[0]}`);
        assert.equal(cancelled.json<Command>().status, 'cancelled');
        assert.equal((await ctx.request('DELETE', `/v2/commands/${ids[0]}`)).json<Command>().status, 'cancelled', 'cancelling again answers the same');
        assert.equal((await post(ctx, 'van-2', { type: 'reboot' })).statusCode, 202);

        const seen: string[] = [];
        let cursor: string | null = null;
        do {
          const res = await ctx.request('GET', '/v2/fleet/vehicles/van-2/commands', { query: { limit: '40', ...(cursor === null ? {} : { cursor }) } });
          assert.equal(res.statusCode, 200, res.body);
          const page = res.json<{ commands: Command[]; nextCursor: string | null }>();
          seen.push(...page.commands.map((c) => c.id));
          cursor = page.nextCursor;
        } while (cursor !== null);
        assert.equal(seen.length, 101);
        assert.deepEqual(seen.slice(1), [...ids].reverse(), 'newest first, in the order they were made');
        const onlyCancelled = (await ctx.request('GET', '/v2/fleet/vehicles/van-2/commands', { query: { status: 'cancelled,expired' } })).json<{ commands: Command[] }>();
        assert.deepEqual(onlyCancelled.commands.map((c) => c.id), [ids[0]]);
        problem(await ctx.request('GET', '/v2/fleet/vehicles/van-2/commands', { query: { cursor: 'bm90LWEtY3Vyc29y' } }), 400, 'validation-failed');
        problem(await ctx.request('GET', '/v2/fleet/vehicles/van-2/commands', { query: { status: 'done' } }), 400, 'validation-failed');
        problem(await ctx.request('GET', '/v2/commands/cmd_00000000000000000000'), 404, 'command-not-found');
        problem(await ctx.request('DELETE', '/v2/commands/cmd_00000000000000000000'), 404, 'command-not-found');
      } finally {
        await ctx.close();
      }
    });

    test('queued commands expire on the clock; an expired one cannot be cancelled; deleting the vehicle deletes its commands', async () => {
      const clock = manualClock(Date.now());
      const ctx = await createTestApp({ backend, clock });
      try {
        await ctx.registerVehicle('van-3');
        const command = (await post(ctx, 'van-3', { type: 'reboot', expiresInSeconds: 10 })).json<Command>();
        clock.advance(9_000);
        for (let i = 0; i < 200 && (await ctx.request('GET', `/v2/commands/${command.id}`)).json<Command>().status !== 'expired'; i++) {
          clock.advance(1_000);
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        assert.equal((await ctx.request('GET', `/v2/commands/${command.id}`)).json<Command>().status, 'expired');
        problem(await ctx.request('DELETE', `/v2/commands/${command.id}`), 409, 'command-not-queued');
        const events = await feedEvents<{ type: string }>(ctx, 'vehicleId=van-3&types=command.queued,command.expired', 2);
        assert.deepEqual(events.map((e) => e.type), ['command.queued', 'command.expired']);
        await ctx.request('DELETE', '/v2/fleet/vehicles/van-3');
        problem(await ctx.request('GET', `/v2/commands/${command.id}`), 404, 'command-not-found');
      } finally {
        await ctx.close();
      }
    });

    test('OsmAnd: the next request of the device is answered with the oldest queued command\'s text, which is then delivered', async () => {
      const ctx = await createTestApp({ backend });
      try {
        await ctx.registerVehicle('phone-van');
        await ctx.request('POST', '/v2/devices', { body: { protocol: 'osmand', identifier: 'phone-2', vehicleId: 'phone-van' } });
        const report = () => ctx.request('GET', '/osmand', { key: null, query: { id: 'phone-2', lat: '52.5', lon: '13.4', timestamp: String(Math.floor(Date.now() / 1000)) } });
        const plain = await report();
        assert.equal(plain.statusCode, 200);
        assert.match(plain.headers['content-type'] as string, /json/);
        const first = (await post(ctx, 'phone-van', { type: 'custom', params: { text: 'interval 30' } })).json<Command>();
        const second = (await post(ctx, 'phone-van', { type: 'custom', params: { text: 'interval 60' } })).json<Command>();
        for (const [command, text] of [[first, 'interval 30'], [second, 'interval 60']] as const) {
          const res = await report();
          assert.equal(res.statusCode, 200);
          assert.match(res.headers['content-type'] as string, /^text\/plain/);
          assert.equal(res.body, text);
          const now = (await ctx.request('GET', `/v2/commands/${command.id}`)).json<Command & { completedAt: string | null }>();
          assert.equal(now.status, 'delivered');
          assert.ok(now.completedAt !== null);
        }
        assert.match((await report()).headers['content-type'] as string, /json/, 'nothing queued: the usual answer');
        const history = (await ctx.request('GET', '/v2/telemetry/phone-van/history')).json<{ records: unknown[] }>();
        assert.ok(history.records.length >= 1, 'the reports that carried commands were stored too');
      } finally {
        await ctx.close();
      }
    });
  });
}
