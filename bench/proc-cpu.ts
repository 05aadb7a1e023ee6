// Where the cores went: CPU time per process and per thread from /proc (Linux), for a benchmark
// that runs several processes (a service, a browser and its helpers) and needs to say which of
// them used the machine while it measured. Times are utime + stime in clock ticks (USER_HZ, 100 a
// second on Linux); a thread that ends during a window loses its share of that window.
import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100;

function statFields(file: string): string[] | undefined {
  try {
    const text = readFileSync(file, 'utf8');
    // The command name (2nd field) may hold spaces and parentheses: the fields after it follow the last ')'.
    return [text.slice(text.indexOf('(') + 1, text.lastIndexOf(')')), ...text.slice(text.lastIndexOf(')') + 2).split(' ')];
  } catch {
    return undefined;
  }
}

/** CPU time `pid` has used so far, seconds (utime + stime, its threads together). */
export function processCpuSeconds(pid: number): number {
  const fields = statFields(`/proc/${pid}/stat`);
  if (fields === undefined) throw new Error(`no process ${pid}`);
  // utime and stime are the 14th and 15th fields; fields[0] is the 2nd.
  return (Number(fields[12]) + Number(fields[13])) / TICKS_PER_SECOND;
}

/** `pid` and every process descended from it. */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const fields = statFields(`/proc/${name}/stat`);
    if (fields === undefined) continue;
    const parent = Number(fields[2]);
    children.set(parent, [...children.get(parent) ?? [], Number(name)]);
  }
  const tree: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    tree.push(pid);
    queue.push(...children.get(pid) ?? []);
  }
  return tree;
}

/** What a Chromium process is, from its command line: renderer, gpu-process, network, … or browser. */
export function chromiumKind(pid: number): string {
  let args: string[];
  try {
    // Chromium rewrites its processes' titles: the arguments may be one string, spaced.
    args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split(/[\0 ]/);
  } catch {
    return 'gone';
  }
  const type = args.find((a) => a.startsWith('--type='))?.slice('--type='.length);
  if (type === undefined) return 'browser';
  if (type === 'utility') {
    const sub = args.find((a) => a.startsWith('--utility-sub-type='))?.slice('--utility-sub-type='.length) ?? 'utility';
    return sub.includes('NetworkService') ? 'network' : sub.includes('Storage') ? 'storage' : `utility ${sub}`;
  }
  return type;
}

/** The cores a process may run on (its Cpus_allowed_list). */
export function allowedCpus(pid: number): string {
  try {
    return /Cpus_allowed_list:\s*(\S+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? '?';
  } catch {
    return 'gone';
  }
}

/** CPU ticks of each thread of the labelled processes, keyed `label\tthread name`; same-named threads add up. */
export function sampleThreads(processes: ReadonlyMap<number, string>): Map<string, number> {
  const ticks = new Map<string, number>();
  for (const [pid, label] of processes) {
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tids) {
      const fields = statFields(`/proc/${pid}/task/${tid}/stat`);
      if (fields === undefined) continue;
      // utime and stime are the 14th and 15th fields; fields[0] is the 2nd.
      const used = Number(fields[12]) + Number(fields[13]);
      // A process's first thread is named after the program: called "main" here.
      const key = `${label}\t${tid === String(pid) ? 'main' : fields[0]!.replace(/\d+$/, '')}`;
      ticks.set(key, (ticks.get(key) ?? 0) + used);
    }
  }
  return ticks;
}

export interface CpuShare {
  label: string;
  /** Share of one core over the window, 1 = a whole core. */
  cores: number;
  threads: { name: string; cores: number }[];
}

/** Per label, the cores used between two samples, largest first, with its threads' shares. */
export function cpuShares(before: Map<string, number>, after: Map<string, number>, seconds: number): CpuShare[] {
  const byLabel = new Map<string, CpuShare>();
  for (const [key, ticks] of after) {
    const used = (ticks - (before.get(key) ?? 0)) / TICKS_PER_SECOND / seconds;
    const [label, thread] = key.split('\t') as [string, string];
    let share = byLabel.get(label);
    if (share === undefined) byLabel.set(label, share = { label, cores: 0, threads: [] });
    share.cores += used;
    share.threads.push({ name: thread, cores: used });
  }
  const shares = [...byLabel.values()].sort((a, b) => b.cores - a.cores);
  for (const share of shares) share.threads.sort((a, b) => b.cores - a.cores);
  return shares;
}
