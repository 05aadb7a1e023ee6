// The container image (Containerfile), built and run with podman: it starts, answers /healthz,
// takes telemetry over HTTP and MQTT, runs as a user that is not root, keeps its data in the volume
// across a new container, and stops within 10 s on SIGTERM. Run by `npm run test:deploy`, outside `npm test`
// (a build takes up to a minute); CI runs it beside the typecheck and the lint.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { MqttClient } from 'mqtt';
import { generateApiKey } from '../src/auth/keys.ts';
import { ensureBaseImage, npmCacheVolume, podman, podmanMissing } from './helpers/container.ts';
import { connectDevice, endAll, freePort, publishOutcome } from './helpers/mqtt.ts';
import { skipUnless } from './helpers/skip.ts';
import { waitUntil } from './helpers/wait.ts';

const skip = skipUnless(podmanMissing(), 'podman', 'the container image test', 'apt-get install podman runc, as root');
const IMAGE = `localhost/fleet-test:${randomBytes(4).toString('hex')}`;
const VOLUME = `fleet-test-${randomBytes(4).toString('hex')}`;
const ADMIN_KEY = generateApiKey();
/** The image's own size budget (the base image included). */
const MAX_IMAGE_BYTES = 250 * 1000 * 1000;

describe('the container image', { skip, timeout: 600_000 }, () => {
  const containers: string[] = [];
  const clients: MqttClient[] = [];
  let ports: { http: number; mqtt: number };

  /** A container of the image on the host's network (the ports chosen free), the volume at /data. */
  async function run(): Promise<{ id: string; url: string }> {
    const id = podman([
      'run', '-d', '--network', 'host', '-v', `${VOLUME}:/data`,
      '-e', `FLEET_PORT=${ports.http}`, '-e', `FLEET_MQTT_PORT=${ports.mqtt}`, '-e', 'FLEET_OSMAND_PORT=0', '-e', 'FLEET_TELTONIKA_PORT=0',
      '-e', `FLEET_ADMIN_KEY=${ADMIN_KEY}`, '-e', 'FLEET_HOST=127.0.0.1', IMAGE,
    ]).trim();
    containers.push(id);
    const url = `http://127.0.0.1:${ports.http}`;
    await waitUntil(async () => (await fetch(`${url}/healthz`).catch(() => undefined))?.status === 200, 'the container to answer /healthz', 60_000);
    return { id, url };
  }
  const api = (url: string, method: string, path: string, body?: unknown) => fetch(url + path, {
    method, headers: { authorization: `Bearer ${ADMIN_KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

  before(async () => {
    ensureBaseImage();
    podman(['build', '--layers=false', '--format', 'docker', '--network', 'host', ...npmCacheVolume(), '-t', IMAGE, '-f', 'Containerfile', '.'], { timeoutMs: 480_000 });
    podman(['volume', 'create', VOLUME]);
    ports = { http: await freePort(), mqtt: await freePort() };
  });
  after(async () => {
    await endAll(clients);
    for (const id of containers) podman(['rm', '-f', '-t', '0', id]);
    podman(['volume', 'rm', '-f', VOLUME]);
    podman(['rmi', '-f', IMAGE]);
  });

  test('is under its size budget, runs as the node user, and says how to check its health', () => {
    const inspect = (format: string) => podman(['image', 'inspect', IMAGE, '--format', format]).trim();
    const size = Number(inspect('{{.Size}}'));
    assert.ok(size < MAX_IMAGE_BYTES, `the image is ${size / 1e6} MB`);
    assert.equal(inspect('{{.Config.User}}'), 'node');
    assert.match(inspect('{{json .Config.Healthcheck.Test}}'), /healthz/);
  });

  test('serves, takes telemetry over HTTP and MQTT, keeps it in the volume, and stops on SIGTERM within 10 s', async () => {
    const first = await run();
    // Its processes (the service, PID 1, and the dashboard's esbuild) are not root's.
    const users = podman(['top', first.id, 'user']).trim().split('\n').slice(1).map((line) => line.trim());
    assert.ok(users.length > 0 && users.every((user) => user === 'node'), users.join(', '));
    assert.equal((await api(first.url, 'POST', '/v2/fleet/vehicles', { vehicleId: 'van-1', type: 'van' })).status, 201);
    const sent = await api(first.url, 'POST', '/v2/telemetry/van-1', { timestamp: '2026-11-28T10:00:00Z', data: { speed: 10 } });
    assert.equal(sent.status, 202, await sent.text());
    const device = await connectDevice(`mqtt://127.0.0.1:${ports.mqtt}`, { username: 'van-1', password: ADMIN_KEY }, clients);
    assert.equal(await publishOutcome(device, 'fleet/van-1/telemetry', JSON.stringify({ timestamp: '2026-11-28T10:00:05Z', data: { speed: 20 } }), 1, 10_000), 'acked');
    await endAll(clients);
    assert.equal(podman(['healthcheck', 'run', first.id]).trim(), '');

    const started = performance.now();
    podman(['stop', '-t', '10', first.id]);
    const seconds = (performance.now() - started) / 1000;
    assert.ok(seconds < 10, `stopped after ${seconds} s`);
    assert.equal(podman(['inspect', first.id, '--format', '{{.State.ExitCode}}']).trim(), '0');
    assert.match(podman(['logs', first.id]), /"msg":"shut down cleanly"/);
    // Only the service's JSON lines on stdout.
    for (const line of podman(['logs', first.id]).trim().split('\n')) assert.doesNotThrow(() => JSON.parse(line), line);

    const second = await run();
    const history = await api(second.url, 'GET', '/v2/telemetry/van-1/history');
    assert.equal(history.status, 200);
    const { records } = (await history.json()) as { records: { timestamp: string; data: { speed: number } }[] };
    assert.deepEqual(records.map((r) => r.data.speed).sort(), [10, 20]);
  });
});
