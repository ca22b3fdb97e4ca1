import { everyInterval } from '../../../core/interval-job';

describe('everyInterval', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('runs first an interval after the start, skips ticks while a run goes on, and stop aborts and waits for it', async () => {
    const starts: number[] = [];
    let finish: (() => void) | undefined;
    let seen: AbortSignal | undefined;
    let ended = false;
    const job = everyInterval(1000, (signal) => {
      starts.push(Date.now());
      seen = signal;
      return new Promise<void>((resolve) => {
        finish = () => {
          ended = true;
          resolve();
        };
      });
    });
    const t0 = Date.now();
    await jest.advanceTimersByTimeAsync(999);
    expect(starts).toEqual([]);
    await jest.advanceTimersByTimeAsync(1);
    expect(starts).toEqual([t0 + 1000]);
    // Two more ticks while the first run has not ended: no second run.
    await jest.advanceTimersByTimeAsync(2000);
    expect(starts).toHaveLength(1);
    finish?.();
    await jest.advanceTimersByTimeAsync(1000);
    expect(starts).toEqual([t0 + 1000, t0 + 4000]);

    ended = false;
    const stopped = job.stop();
    expect(seen?.aborted).toBe(true);
    let done = false;
    void stopped.then(() => (done = true));
    await jest.advanceTimersByTimeAsync(0);
    expect(done).toBe(false);
    finish?.();
    await stopped;
    expect(ended).toBe(true);
    await jest.advanceTimersByTimeAsync(5000);
    expect(starts).toHaveLength(2);
  });
});
