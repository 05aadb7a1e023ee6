// Real MQTT clients over real sockets for the MQTT suites. Every wait is bounded; every client a
// test opens is registered with `t.after` (or the suite's after hook) and ended there.
import { type IClientOptions, type MqttClient, connect } from 'mqtt';
import type { TestApp } from './app.ts';
import { withTimeout } from './process.ts';
export { freePort } from './ports.ts';

export { withTimeout };


/**
 * Connects (no automatic reconnect unless asked), bounded. The client joins `opened` before it
 * connects, so the after hook ends it even when the connection is refused or never answered.
 */
export async function connectDevice(url: string, options: IClientOptions, opened: MqttClient[]): Promise<MqttClient> {
  const client = connect(url, { reconnectPeriod: 0, connectTimeout: 5_000, clientId: `test-${Math.random().toString(36).slice(2)}`, ...options });
  opened.push(client);
  await withTimeout(
    new Promise<void>((resolve, reject) => {
      client.once('connect', () => resolve());
      client.once('error', reject);
    }),
    7_000,
    `an MQTT connection to ${url}`,
  );
  return client;
}

/** Ends every client, forcibly (a test may have left one mid-flight), bounded. */
export async function endAll(clients: MqttClient[]): Promise<void> {
  await Promise.all(clients.splice(0).map((client) => withTimeout(client.endAsync(true), 5_000, 'an MQTT client to end').catch(() => undefined)));
}

export type PublishOutcome = 'acked' | 'closed' | 'timeout';

/**
 * Publishes and reports what came back first: the acknowledgement (for QoS 0: the write), the
 * connection closing, or nothing within `ms`.
 */
export function publishOutcome(client: MqttClient, topic: string, payload: string | Buffer, qos: 0 | 1 | 2, ms = 2_000): Promise<PublishOutcome> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => finish('timeout'), ms);
    const onClose = () => finish('closed');
    function finish(outcome: PublishOutcome) {
      clearTimeout(timer);
      client.off('close', onClose);
      resolve(outcome);
    }
    client.once('close', onClose);
    client.publish(topic, payload, { qos }, (error) => {
      if (error === undefined || error === null) finish('acked');
    });
  });
}

/** The value of `fleet_mqtt_messages_total{outcome=...}` on the app's /metrics. */
export async function messagesCounted(ctx: TestApp, outcome: string): Promise<number> {
  const res = await ctx.request('GET', '/metrics');
  const match = new RegExp(`^fleet_mqtt_messages_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm').exec(res.body);
  if (match === null) throw new Error(`no fleet_mqtt_messages_total{outcome="${outcome}"} in /metrics`);
  return Number(match[1]);
}

/** The timestamps of a vehicle's stored records, read over HTTP. */
export async function storedTimestamps(ctx: TestApp, vehicleId: string): Promise<string[]> {
  const res = await ctx.request('GET', `/v2/telemetry/${vehicleId}/history?limit=10000`);
  if (res.statusCode !== 200) throw new Error(`history of ${vehicleId}: ${res.statusCode} ${res.body}`);
  return res.json<{ records: { timestamp: string }[] }>().records.map((r) => r.timestamp);
}

/** Whether the broker answers a CONNECT within 2 s. */
export async function brokerAnswers(url: string): Promise<boolean> {
  const probe = connect(url, { reconnectPeriod: 0, connectTimeout: 2_000, protocolVersion: 5 });
  try {
    await withTimeout(new Promise<void>((resolve, reject) => {
      probe.once('connect', () => resolve());
      probe.once('error', reject);
      probe.once('close', () => reject(new Error('closed')));
    }), 3_000, 'the broker');
    return true;
  } catch {
    return false;
  } finally {
    probe.end(true);
  }
}
