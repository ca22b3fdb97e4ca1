/** A job the interval runs until stopped. */
export interface IntervalJob {
  /** Ends the timer, aborts the run in progress (its signal) and waits for it. */
  stop(): Promise<void>;
}

/**
 * Runs `job` every `intervalMs`, the first time an interval after the start (a restart loop then does not hammer
 * what it works on), and never two runs at once: a tick that finds the last run still going skips. The job handles
 * its own failures (a rejection would be unhandled).
 */
export function everyInterval(intervalMs: number, job: (signal: AbortSignal) => Promise<void>): IntervalJob {
  const abort = new AbortController();
  let running: Promise<void> | null = null;
  const timer = setInterval(() => {
    if (!running) running = job(abort.signal).finally(() => (running = null));
  }, intervalMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      abort.abort();
      await running;
    },
  };
}
