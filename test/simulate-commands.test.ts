// The simulator's devices answer commands (docs/API.md "Commands"): a simulated Teltonika tracker
// reads Codec 12 commands between its acknowledgements and answers them as a tracker would, so
// that a command can be tried from the README with `npm run simulate -- --protocol teltonika`; a
// simulated OsmAnd app is handed a command as the answer to a report and shows its text.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Counters, answerCommand, osmandTransport, teltonikaTransport } from '../src/cli/simulate-devices.ts';
import { decodeCodec12, encodeCodec12 } from '../src/protocols/teltonika/codec12.ts';
import { Framer } from '../src/protocols/teltonika/frame.ts';
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

const noCounts = (): Counters => ({ sent: 0, accepted: 0, duplicates: 0, errors: 0, skipped: 0, lastError: undefined, failingSince: undefined });

describe('a simulated tracker reading what its listener sends', () => {
  test('acknowledgements and commands are told apart however the bytes come: a command with the login\'s answer, an acknowledgement split, a command a byte at a time', async (t) => {
    const answers: string[] = [];
    const server = net.createServer((socket) => {
      const framer = new Framer();
      socket.on('data', (chunk) => {
        for (const frame of framer.push(chunk)) {
          if (frame.kind === 'imei') socket.write(Buffer.concat([Buffer.from([0x01]), encodeCodec12('getver')]));
          if (frame.kind === 'codec12') {
            const message = decodeCodec12(frame.data);
            answers.push('malformed' in message ? message.malformed : `${message.type}: ${message.text}`);
          }
          if (frame.kind !== 'packet') continue;
          const ack = Buffer.alloc(4);
          ack.writeUInt32BE(frame.data[1]!);
          void (async () => {
            socket.write(ack.subarray(0, 2));
            await sleep(5);
            socket.write(Buffer.concat([ack.subarray(2), encodeCodec12('setdigout 1')]));
            for (const byte of encodeCodec12('getgps')) {
              await sleep(1);
              socket.write(Buffer.from([byte]));
            }
          })();
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const counters = noCounts();
    const told: string[] = [];
    const transport = await teltonikaTransport('127.0.0.1', (server.address() as net.AddressInfo).port, new Map([['v-1', '356307042441013']]), counters, (_v, command) => told.push(command));
    try {
      const at = (seconds: number) => new Date(Date.UTC(2026, 10, 28, 8, 0, seconds)).toISOString();
      transport.send([
        { vehicleId: 'v-1', timestamp: at(0), data: { location: { lat: 52.5, lng: 13.4 }, speed: 40, heading: 90 } },
        { vehicleId: 'v-1', timestamp: at(1), data: { location: { lat: 52.520008, lng: 13.404954 }, speed: 42, heading: 90 } },
      ]);
      await waitUntil(() => answers.length === 3, 'three answers');
      assert.equal(counters.accepted, 2);
      assert.deepEqual(told, ['getver', 'setdigout 1', 'getgps']);
      assert.deepEqual(answers, [
        '6: Ver:03.28.07 Hw:FMB920 Mod:12 IMEI:simulated',
        '6: DOUT1:1 DOUT2:0 DOUT3:0 DOUT4:0',
        '6: GPS:1 Sat:9 Lat:52.520008 Long:13.404954 Alt:0 Speed:42 Dir:90 Date: 2026/11/28 Time: 08:00:01',
      ]);
      assert.equal(counters.errors, 0, counters.lastError);
    } finally {
      await transport.close();
    }
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
    const counters = noCounts();
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

describe('the simulator\'s OsmAnd transport against the service', () => {
  let ctx: TestApp;
  let port: number;
  before(async () => {
    port = await freePort();
    ctx = await createTestApp({ env: { FLEET_OSMAND_PORT: String(port), FLEET_PROTOCOLS_HOST: '127.0.0.1' } });
  });
  after(() => ctx.close());

  test('a report answered with a queued command\'s text is counted stored, and the text is told; the command is delivered', async () => {
    await ctx.registerVehicle('sim-2');
    assert.equal((await ctx.request('POST', '/v2/devices', { body: { protocol: 'osmand', identifier: 'sim-2-phone', vehicleId: 'sim-2' } })).statusCode, 201);
    const created = await ctx.request('POST', '/v2/fleet/vehicles/sim-2/commands', { body: { type: 'custom', params: { text: 'Drive to the depot' } } });
    assert.equal(created.statusCode, 202, created.body);
    const counters = noCounts();
    const received: string[] = [];
    const transport = osmandTransport(`http://127.0.0.1:${port}`, new Map([['sim-2', 'sim-2-phone']]), counters, (vehicleId, command) => received.push(`${vehicleId}: ${command}`));
    const record = (secondsAgo: number, lat: number) => ({ vehicleId: 'sim-2', timestamp: new Date(Date.now() - secondsAgo * 1000).toISOString(), data: { location: { lat, lng: 13.4 }, speed: 20 } });
    transport.send([record(5, 52.5)]);
    await waitUntil(() => counters.accepted === 1, 'the first report answered');
    transport.send([record(4, 52.6)]);
    await waitUntil(() => counters.accepted === 2, 'the second report answered');
    await transport.close();
    assert.deepEqual(received, ['sim-2: Drive to the depot']);
    assert.equal(counters.errors, 0, counters.lastError);
    assert.equal((await ctx.request('GET', `/v2/commands/${created.json().id}`)).json<{ status: string }>().status, 'delivered');
    const history = (await ctx.request('GET', '/v2/telemetry/sim-2/history')).json<{ records: unknown[] }>();
    assert.equal(history.records.length, 2);
  });
});
