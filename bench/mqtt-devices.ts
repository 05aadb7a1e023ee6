// The devices of the MQTT benchmark, in a process of their own: `connections` MQTT clients publish
// QoS 1 telemetry, message k to vehicle k mod V with the timestamp start + k (unique across a run),
// as the parent allows. The parent sends `{credit: n}` (publish n more) and `{end: true}`; this
// process answers `{ready: true}` once connected and `{cpu}` (seconds used) at the end.
import { type MqttClient, connect } from 'mqtt';
import { dataText } from './rows.ts';

export interface DeviceSpec {
  url: string;
  /** The embedded listener wants an API key as the password; a broker may want nothing. */
  password?: string;
  connections: number;
  vehicles: readonly string[];
  start: number;
}

const spec = JSON.parse(process.argv[2]!) as DeviceSpec;
const clients: MqttClient[] = await Promise.all(Array.from({ length: spec.connections }, (_, i) => new Promise<MqttClient>((resolve, reject) => {
  const client = connect(spec.url, {
    clientId: `bench-device-${process.pid}-${i}`, protocolVersion: 4, reconnectPeriod: 0,
    ...(spec.password === undefined ? {} : { username: 'device', password: spec.password }),
  });
  client.once('connect', () => resolve(client));
  client.once('error', reject);
})));

let k = 0;
let credit = 0;
let next = 0;
function publish(): void {
  while (credit > 0) {
    credit--;
    const i = k++;
    const vehicleId = spec.vehicles[i % spec.vehicles.length]!;
    const body = `{"timestamp":"${new Date(spec.start + i).toISOString()}","data":${dataText(i)}}`;
    clients[next++ % clients.length]!.publish(`fleet/${vehicleId}/telemetry`, body, { qos: 1 });
  }
}

const cpu = process.cpuUsage();
process.on('message', (message: { credit?: number; end?: boolean }) => {
  if (message.credit !== undefined) {
    credit += message.credit;
    publish();
  }
  if (message.end === true) {
    const used = process.cpuUsage(cpu);
    void Promise.all(clients.map((c) => c.endAsync(true))).then(() => {
      process.send!({ cpu: (used.user + used.system) / 1e6 }, () => process.exit(0));
    });
  }
});
process.send!({ ready: true });
