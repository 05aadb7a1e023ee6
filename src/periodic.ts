// A background job run every so often (retention, clean-ups): never two runs at once, and its
// timer never keeps the process alive. `run` reports how many rows it removed; a run asked for
// while one is going answers 0.
export function startPeriodic(run: () => Promise<number>, intervalMs: number): { runOnce(): Promise<number>; stop(): void } {
  let running = false;
  async function runOnce(): Promise<number> {
    if (running) return 0;
    running = true;
    try {
      return await run();
    } finally {
      running = false;
    }
  }
  const timer = setInterval(() => void runOnce(), intervalMs);
  timer.unref();
  return { runOnce, stop: () => clearInterval(timer) };
}
