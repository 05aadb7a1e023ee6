// The simulator's devices answer commands (docs/API.md "Commands"): a simulated Teltonika tracker
// reads Codec 12 commands between its acknowledgements and answers them as a tracker would, so
// that a command can be tried from the README with `npm run simulate -- --protocol teltonika`.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Counters, answerCommand, teltonikaTransport } from '../src/cli/simulate-devices.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { freePort } from './helpers/mqtt.ts';
import { waitUntil } from './helpers/wait.ts';

describe('a simulated tracker\'s answers', () => {
  test('getgps gives its last fix; setdigout sets the outputs it names and leaves the ? ones; unknown texts are said to be', () => {
    const state = {
      last: { vehicleId: 'v', timestamp: '2026-11-28T08:00:01.000Z', data: { location: { lat: 52.520008, lng: 13.404954 }, speed: 42, heading: 90 } },
      outputs: [false, false, false, false] as [boolean, boolean, boolean, boolean],
    };
    assert.equal(answerCommand('getgps', state), 'GPS:1 Sat:9 Lat:52.520008 Long:13.404954 Alt:0 Speed:42 Dir:90 Date: 2026/11/28 Time: 08:00:01');
    assert.equal(answerCommand('setdigout ?1??', state), 'DOUT1:0 DOUT2:1 DOUT3:0 DOUT4:0');
    assert.equal(answerCommand('setdigout 1', state), 'DOUT1:1 DOUT2:1 DOUT3:0 DOUT4:0');
    assert.equal(answerCommand('setdigout ???0', state), 'DOUT1:1 DOUT2:1 DOUT3:0 DOUT4:0');
    assert.equal(answerCommand('setdigout x', state), 'Wrong setdigout parameters');
    assert.equal(answerCommand('cpureset', state), 'Device will reboot');
    assert.equal(answerCommand('launch rockets', state), 'Unknown command');
    assert.equal(answerCommand('getgps', { last: undefined, outputs: [false, false, false, false] }), 'GPS:0 Sat:0 Lat:0 Long:0 Alt:0 Speed:0 Dir:0');
  });
});

describe('the simulator\'s Teltonika transport against the service', () => {
  let ctx: TestApp;
  let port: number;
  before(async () => {
    port = await freePort();
    ctx = await createTestApp({ env: { FLEET_TELTONIKA_PORT: String(port), FLEET_PROTOCOLS_HOST: '127.0.0.1' } });
  });
  after(() => ctx.close());

  test('commands sent through the API come back succeeded with the tracker\'s answers, between its acknowledged packets', async () => {
    await ctx.registerVehicle('sim-1');
    const imei = '355000000000001';
    assert.equal((await ctx.request('POST', '/v2/devices', { body: { protocol: 'teltonika', identifier: imei, vehicleId: 'sim-1' } })).statusCode, 201);
    const counters: Counters = { sent: 0, accepted: 0, duplicates: 0, errors: 0, skipped: 0, lastError: undefined, failingSince: undefined };
    const answered: string[] = [];
    const transport = await teltonikaTransport('127.0.0.1', port, new Map([['sim-1', imei]]), counters, (_vehicle, command, answer) => answered.push(`${command} → ${answer}`));
    try {
      const timestamp = new Date(Date.now() - 5_000).toISOString();
      transport.send([{ vehicleId: 'sim-1', timestamp, data: { location: { lat: 48.1, lng: 11.5 }, speed: 30, heading: 180 } }]);
      await waitUntil(() => counters.accepted === 1, 'the packet acknowledged');
      const ids: string[] = [];
      for (const body of [{ type: 'positionSingle' }, { type: 'outputControl', params: { output: 2, on: true } }]) {
        const res = await ctx.request('POST', '/v2/fleet/vehicles/sim-1/commands', { body });
        assert.equal(res.statusCode, 202, res.body);
        ids.push(res.json().id);
      }
      // Packets keep flowing while commands are answered.
      transport.send([{ vehicleId: 'sim-1', timestamp: new Date(Date.now() - 4_000).toISOString(), data: { location: { lat: 48.2, lng: 11.5 }, speed: 31 } }]);
      const read = async (id: string) => (await ctx.request('GET', `/v2/commands/${id}`)).json<{ status: string; result: string | null }>();
      await waitUntil(async () => (await read(ids[1]!)).status === 'succeeded', 'both commands answered');
      assert.match((await read(ids[0]!)).result!, /^GPS:1 Sat:9 Lat:48\.\d+ Long:11\.500000 /);
      assert.equal((await read(ids[1]!)).result, 'DOUT1:0 DOUT2:1 DOUT3:0 DOUT4:0');
      await waitUntil(() => counters.accepted === 2, 'the second packet acknowledged');
      assert.equal(answered.length, 2);
      assert.equal(counters.errors, 0);
    } finally {
      await transport.close();
    }
  });
});
