// What every device port's listener shares, whatever it speaks: started with the app and stopped
// before the store closes, and its state for /readyz (starting, up, shutting down, or why it could
// not listen). A port that cannot listen leaves the service running without it.
import type { FastifyBaseLogger } from 'fastify';
import type { CheckState } from '../readiness.ts';

export interface ProtocolListener {
  start(): Promise<void>;
  stop(): Promise<void>;
  readiness(): Promise<CheckState>;
  /** The host it was told to listen on and the port it listens on, while it does (GET /v2/device-endpoints). */
  address(): { host: string; port: number } | undefined;
}

/** Why a listener could not start, as /readyz and the log say it. */
function listenFailure(name: string, host: string, port: number, error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  const why = code === 'EADDRINUSE' ? `port ${port} on ${host} is in use` : `cannot listen on ${host}:${port} (${code ?? String(error)})`;
  return `${why}; ${name} ingestion is off`;
}

export function createProtocolListener(spec: {
  /** The protocol, as the log names its listener. */
  name: string;
  /** What /readyz says is off when it cannot listen: "<ingestion> ingestion is off". */
  ingestion: string;
  host: string;
  port: number;
  log: FastifyBaseLogger;
  /** Listens on host:port and answers the port it listens on; throws, holding nothing open, when it cannot. */
  listen(): Promise<number>;
  /** Stops taking connections and answers what has arrived; also called when listen failed. */
  close(): Promise<void>;
}): ProtocolListener {
  const { name, host, port, log } = spec;
  let state: CheckState = { degraded: 'starting' };
  let listening: number | undefined;

  async function start() {
    try {
      listening = await spec.listen();
    } catch (error) {
      state = { degraded: listenFailure(spec.ingestion, host, port, error) };
      log.warn({ err: error, host, port }, `${name} listener not started: ${state.degraded}.`);
      return;
    }
    state = 'up';
    log.info({ host, port: listening }, `${name} listener started`);
  }

  async function stop() {
    state = { degraded: 'shutting down' };
    listening = undefined;
    await spec.close();
  }

  return { start, stop, readiness: async () => state, address: () => (listening === undefined ? undefined : { host, port: listening }) };
}
