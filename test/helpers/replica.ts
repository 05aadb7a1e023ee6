// A PostgreSQL primary and a streaming replica of it, made for a suite from the PostgreSQL server
// binaries on this machine (initdb, pg_basebackup -R), each on a port of its own under a temporary
// directory, and removed after. Run as the `postgres` user (runuser) when the suite runs as root.
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, appendFileSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports.ts';
import { queryAt } from './postgres.ts';

const run = promisify(execFile);

/** The server binaries of the newest PostgreSQL installed the Debian way, if any. */
export function postgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a));
  return versions.map((v) => path.join(root, v, 'bin')).find((bin) => existsSync(path.join(bin, 'initdb')) && existsSync(path.join(bin, 'pg_basebackup')));
}

export interface ReplicaPair {
  primaryUrl: string;
  replicaUrl: string;
  /** A statement on the replica (pause or resume its replay, say). */
  onReplica(sql: string): Promise<unknown[]>;
  onPrimary(sql: string): Promise<unknown[]>;
  stopReplica(): Promise<void>;
  close(): Promise<void>;
}

export async function startReplicaPair(bin: string): Promise<ReplicaPair> {
  const dir = mkdtempSync(path.join(tmpdir(), 'fleet-replica-'));
  const asRoot = userInfo().uid === 0;
  if (asRoot) chownSync(dir, Number((await run('id', ['-u', 'postgres'])).stdout.trim()), Number((await run('id', ['-g', 'postgres'])).stdout.trim()));
  const pgRun = (tool: string, args: string[]) => asRoot
    ? run('runuser', ['-u', 'postgres', '--', path.join(bin, tool), ...args])
    : run(path.join(bin, tool), args);
  const [primaryPort, replicaPort] = [await freePort(), await freePort()];
  const primaryDir = path.join(dir, 'primary');
  const replicaDir = path.join(dir, 'replica');
  const started: string[] = [];
  const stop = async (data: string) => {
    if (!started.includes(data)) return;
    started.splice(started.indexOf(data), 1);
    await pgRun('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
  };
  const close = async () => {
    await stop(replicaDir);
    await stop(primaryDir);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await pgRun('initdb', ['-D', primaryDir, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
    appendFileSync(path.join(primaryDir, 'postgresql.conf'), [
      `port = ${primaryPort}`, "listen_addresses = '127.0.0.1'", `unix_socket_directories = '${dir}'`, 'fsync = off', 'wal_level = replica', '',
    ].join('\n'));
    appendFileSync(path.join(primaryDir, 'pg_hba.conf'), 'host replication all 127.0.0.1/32 trust\n');
    await pgRun('pg_ctl', ['-D', primaryDir, '-l', path.join(dir, 'primary.log'), '-w', 'start']);
    started.push(primaryDir);
    await pgRun('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres', '-D', replicaDir, '-R', '-X', 'stream', '-c', 'fast']);
    appendFileSync(path.join(replicaDir, 'postgresql.conf'), `port = ${replicaPort}\n`);
    await pgRun('pg_ctl', ['-D', replicaDir, '-l', path.join(dir, 'replica.log'), '-w', 'start']);
    started.push(replicaDir);
  } catch (error) {
    await close();
    throw error;
  }
  const urlOf = (port: number) => `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    primaryUrl: urlOf(primaryPort),
    replicaUrl: urlOf(replicaPort),
    onReplica: (sql) => queryAt(urlOf(replicaPort), sql),
    onPrimary: (sql) => queryAt(urlOf(primaryPort), sql),
    stopReplica: () => stop(replicaDir),
    close,
  };
}
