// CPU-capped control groups for benchmark processes: each Fleet node gets a fixed share of a core,
// so that on one machine the nodes (not PostgreSQL, the load generators or other work) are what a
// cluster benchmark saturates. cgroup v1's cpu controller (cpu.cfs_quota_us / cpu.cfs_period_us)
// where it is mounted, else cgroup v2 (cpu.max). Needs root. Every group made is removed by
// removeAll(), which the caller runs in its `finally`, after the processes in them have exited;
// an exit hook tries again for groups left behind.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const V1 = '/sys/fs/cgroup/cpu';
const V2 = '/sys/fs/cgroup';
const PERIOD_US = 100_000;

export interface CpuGroup {
  name: string;
  dir: string;
  /** Moves a process (all its threads) into the group. */
  add(pid: number): void;
  /** Periods the group ran in, and in how many it was throttled (hit its quota): cumulative. */
  stat(): { periods: number; throttled: number };
}

type Flavour = { kind: 'v1'; root: string } | { kind: 'v2'; root: string };

/** Which cgroup interface caps CPU here, or why none can be used. */
export function cpuCgroups(): Flavour | { kind: 'none'; why: string } {
  if (process.getuid?.() !== 0) return { kind: 'none', why: 'not root' };
  if (existsSync(path.join(V1, 'cpu.cfs_quota_us'))) return { kind: 'v1', root: V1 };
  if (existsSync(path.join(V2, 'cgroup.controllers')) && readFileSync(path.join(V2, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('cpu')) {
    return { kind: 'v2', root: V2 };
  }
  return { kind: 'none', why: 'no cgroup v1 cpu controller at /sys/fs/cgroup/cpu and no cgroup v2 with cpu at /sys/fs/cgroup' };
}

const made: string[] = [];

function removeQuietly(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

process.once('exit', () => {
  for (const dir of made.splice(0)) removeQuietly(dir);
});

/** A new group named `name` capped at `cores` (e.g. 0.3) of one core. */
export function cpuGroup(flavour: Flavour, name: string, cores: number): CpuGroup {
  const dir = path.join(flavour.root, name);
  mkdirSync(dir);
  made.push(dir);
  const quota = Math.round(cores * PERIOD_US);
  if (flavour.kind === 'v1') {
    writeFileSync(path.join(dir, 'cpu.cfs_period_us'), String(PERIOD_US));
    writeFileSync(path.join(dir, 'cpu.cfs_quota_us'), String(quota));
  } else {
    // The cpu controller must be on for the root's children; writing it again is harmless.
    writeFileSync(path.join(flavour.root, 'cgroup.subtree_control'), '+cpu');
    writeFileSync(path.join(dir, 'cpu.max'), `${quota} ${PERIOD_US}`);
  }
  return {
    name,
    dir,
    add(pid) {
      writeFileSync(path.join(dir, 'cgroup.procs'), String(pid));
    },
    stat() {
      const fields = Object.fromEntries(
        readFileSync(path.join(dir, 'cpu.stat'), 'utf8').trim().split('\n').map((line) => line.split(' ') as [string, string]),
      );
      return { periods: Number(fields.nr_periods ?? 0), throttled: Number(fields.nr_throttled ?? 0) };
    },
  };
}

/** Removes every group made, once its processes have exited; returns those that could not go. */
export function removeAll(): string[] {
  return made.splice(0).filter((dir) => !removeQuietly(dir));
}
