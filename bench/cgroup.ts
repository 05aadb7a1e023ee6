// CPU-capped control groups for benchmark processes: each Fleet node gets a fixed share of a core,
// so that on one machine the nodes (not PostgreSQL, the load generators or other work) are what a
// cluster benchmark saturates. cgroup v1's cpu controller (cpu.cfs_quota_us / cpu.cfs_period_us)
// where it is mounted, else cgroup v2 (cpu.max). Needs root. Every group made is removed by
// removeAll(), which the caller runs in its `finally`, after the processes in them have exited;
// an exit hook tries again for groups left behind.
//
// Cpuset groups pin processes to cores of their own (cpuset.cpus): the dashboard benchmark puts
// the service on some cores and the browser on the others, as they are in use (on different
// machines). cgroup v1's cpuset controller where it is mounted, else cgroup v2's.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const V1 = '/sys/fs/cgroup/cpu';
const V1_CPUSET = '/sys/fs/cgroup/cpuset';
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

/** Which cgroup interface offers `controller` here (v1 at `v1Root`, judged by `v1File`), or why none can be used. */
function controllerCgroups(controller: 'cpu' | 'cpuset', v1Root: string, v1File: string): Flavour | { kind: 'none'; why: string } {
  if (process.getuid?.() !== 0) return { kind: 'none', why: 'not root' };
  if (existsSync(path.join(v1Root, v1File))) return { kind: 'v1', root: v1Root };
  if (existsSync(path.join(V2, 'cgroup.controllers')) && readFileSync(path.join(V2, 'cgroup.controllers'), 'utf8').split(/\s+/).includes(controller)) {
    return { kind: 'v2', root: V2 };
  }
  return { kind: 'none', why: `no cgroup v1 ${controller} controller at ${v1Root} and no cgroup v2 with ${controller} at ${V2}` };
}

/** Which cgroup interface caps CPU here, or why none can be used. */
export function cpuCgroups(): Flavour | { kind: 'none'; why: string } {
  return controllerCgroups('cpu', V1, 'cpu.cfs_quota_us');
}

/** Which cgroup interface pins processes to cores here, or why none can be used. */
export function cpusetCgroups(): Flavour | { kind: 'none'; why: string } {
  return controllerCgroups('cpuset', V1_CPUSET, 'cpuset.cpus');
}

/** Groups made, in order, with the root of their hierarchy. */
const made: { dir: string; root: string }[] = [];

function removeQuietly(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

// A run that fails before its own clean-up: this process leaves its group, then the groups go
// (those whose processes have exited; a child killed with its parent is gone by then).
process.once('exit', () => {
  for (const root of new Set(made.map((group) => group.root))) {
    try {
      writeFileSync(path.join(root, 'cgroup.procs'), String(process.pid));
    } catch {
      // Not in a group of ours.
    }
  }
  for (const { dir } of made.splice(0).reverse()) removeQuietly(dir);
});

/**
 * A new group named `name`, capped at `cores` (e.g. 0.3) of one core, or uncapped when undefined.
 * `weight` is its share against other work when the machine is busy: 1 is what every process
 * outside a group counts as. Weighted above 1, a group gets its cap even on a machine shared with
 * other work, so what a benchmark measures is its own processes, not what others ran meanwhile.
 */
export function cpuGroup(flavour: Flavour, name: string, cores: number | undefined, weight = 1): CpuGroup {
  const dir = path.join(flavour.root, name);
  mkdirSync(dir);
  made.push({ dir, root: flavour.root });
  const quota = cores === undefined ? undefined : Math.round(cores * PERIOD_US);
  if (flavour.kind === 'v1') {
    writeFileSync(path.join(dir, 'cpu.cfs_period_us'), String(PERIOD_US));
    writeFileSync(path.join(dir, 'cpu.cfs_quota_us'), String(quota ?? -1));
    writeFileSync(path.join(dir, 'cpu.shares'), String(Math.round(1024 * weight)));
  } else {
    // The cpu controller must be on for the root's children; writing it again is harmless.
    writeFileSync(path.join(flavour.root, 'cgroup.subtree_control'), '+cpu');
    writeFileSync(path.join(dir, 'cpu.max'), `${quota ?? 'max'} ${PERIOD_US}`);
    writeFileSync(path.join(dir, 'cpu.weight'), String(Math.min(10_000, Math.round(100 * weight))));
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

export interface CpusetGroup {
  name: string;
  dir: string;
  /** The cores, as cpuset.cpus lists them ("0", "2-3"). */
  cpus: string;
  /** Moves a process (all its threads) into the group; processes it starts later are born there. */
  add(pid: number): void;
}

/** A new group named `name` whose processes run only on the cores `cpus` (e.g. [1]). */
export function cpusetGroup(flavour: Flavour, name: string, cpus: readonly number[]): CpusetGroup {
  const dir = path.join(flavour.root, name);
  const list = cpus.join(',');
  if (flavour.kind === 'v2') writeFileSync(path.join(flavour.root, 'cgroup.subtree_control'), '+cpuset');
  mkdirSync(dir);
  made.push({ dir, root: flavour.root });
  writeFileSync(path.join(dir, 'cpuset.cpus'), list);
  // v1 needs the memory nodes too before a process may join; the parent's are the machine's.
  if (flavour.kind === 'v1') writeFileSync(path.join(dir, 'cpuset.mems'), readFileSync(path.join(flavour.root, 'cpuset.mems'), 'utf8').trim());
  return {
    name,
    dir,
    cpus: readFileSync(path.join(dir, flavour.kind === 'v1' ? 'cpuset.cpus' : 'cpuset.cpus.effective'), 'utf8').trim(),
    add(pid) {
      writeFileSync(path.join(dir, 'cgroup.procs'), String(pid));
    },
  };
}

/** Moves a process back to the root group (so that its group can be removed). */
export function leaveGroup(flavour: Flavour, pid: number): void {
  writeFileSync(path.join(flavour.root, 'cgroup.procs'), String(pid));
}

/**
 * Removes every group made, once its processes have exited; returns those that could not go (yet:
 * a process that has just exited may still count for a moment). Those are tried again by the next
 * call and at exit.
 */
export function removeAll(): string[] {
  const left = made.splice(0).reverse().filter(({ dir }) => !removeQuietly(dir)).reverse();
  made.push(...left);
  return left.map(({ dir }) => dir);
}
