// GET /v2/device-endpoints (docs/API.md "Devices and protocols"): where devices reach the process
// that answers. Each app listens on ports of its own; what the answer names is connected to.
// Authentication and the scope are the security suite's (test/security.test.ts).
import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, type TestContext, test } from 'node:test';
import type { Env } from '../src/config.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { freePort } from './helpers/mqtt.ts';
import { withTimeout } from './helpers/process.ts';

async function app(t: TestContext, env: Env): Promise<TestApp> {
  const ctx = await createTestApp({ env });
  t.after(() => ctx.close());
  return ctx;
}

async function endpoints(ctx: TestApp, key?: string): Promise<any> {
  const res = await ctx.request('GET', '/v2/device-endpoints', { key });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

/** Whether a TCP connection to host:port is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return withTimeout(new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  }), 5_000, `a connection to ${host}:${port}`);
}

describe('GET /v2/device-endpoints', () => {
  test('every listener off: each is null', async (t) => {
    const ctx = await app(t, {});
    assert.deepEqual(await endpoints(ctx), { mqtt: null, osmand: null, teltonika: null });
  });

  test('listeners on a given address: that address and the ports they bound, to which devices connect; a key with telemetry:write alone may ask', async (t) => {
    const [mqtt, osmand, teltonika] = [await freePort(), await freePort(), await freePort()];
    const ctx = await app(t, {
      FLEET_PUBLIC_URL: 'https://fleet.example.com',
      FLEET_MQTT_PORT: String(mqtt), FLEET_MQTT_HOST: '127.0.0.1',
      FLEET_OSMAND_PORT: String(osmand), FLEET_TELTONIKA_PORT: String(teltonika), FLEET_PROTOCOLS_HOST: '127.0.0.1',
    });
    const answer = await endpoints(ctx, await ctx.keyWith(['telemetry:write']));
    assert.deepEqual(answer, {
      mqtt: { url: `mqtt://127.0.0.1:${mqtt}`, broker: 'embedded' },
      osmand: { url: `http://127.0.0.1:${osmand}/` },
      teltonika: { host: '127.0.0.1', port: teltonika },
    });
    for (const port of [mqtt, osmand, teltonika]) assert.ok(await accepts('127.0.0.1', port), `port ${port} listens`);
  });

  test('listeners on every address: the host of the public URL; a port that could not be bound: null', async (t) => {
    const [mqtt, teltonika] = [await freePort(), await freePort()];
    // The OsmAnd port is taken: that listener does not start, and is not named.
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '0.0.0.0', resolve));
    t.after(() => new Promise<void>((resolve) => taken.close(() => resolve())));
    const osmand = (taken.address() as net.AddressInfo).port;
    const ctx = await app(t, {
      FLEET_HOST: '0.0.0.0', FLEET_PUBLIC_URL: 'https://fleet.example.com/',
      FLEET_MQTT_PORT: String(mqtt), FLEET_OSMAND_PORT: String(osmand), FLEET_TELTONIKA_PORT: String(teltonika),
    });
    assert.deepEqual(await endpoints(ctx), {
      mqtt: { url: `mqtt://fleet.example.com:${mqtt}`, broker: 'embedded' },
      osmand: null,
      teltonika: { host: 'fleet.example.com', port: teltonika },
    });
    assert.match((await ctx.request('GET', '/readyz', { key: null })).json().checks.osmand, /^degraded: port \d+ .* is in use/);
  });

  test('an existing broker: its URL, said to be external', async (t) => {
    const broker = await freePort();
    const ctx = await createTestApp({
      env: (organizationId) => ({
        FLEET_MQTT_URL: `mqtt://127.0.0.1:${broker}`, FLEET_MQTT_ORGANIZATION: organizationId, FLEET_MQTT_USERNAME: 'fleet', FLEET_MQTT_PASSWORD: 'secret',
        FLEET_MQTT_CLIENT_ID: `fleet-endpoints-${broker}`,
      }),
    });
    t.after(() => ctx.close());
    const answer = await endpoints(ctx);
    assert.deepEqual(answer, { mqtt: { url: `mqtt://127.0.0.1:${broker}`, broker: 'external' }, osmand: null, teltonika: null });
    assert.ok(!JSON.stringify(answer).includes('secret'), 'never its credentials');
  });
});
