import { BacklogWatch, Reservoir } from '../../../scanner/backlog-watch';

const config = {
  passIntervalMs: 1000,
  backlogPassIntervalMs: 10_000,
  backlogMaxPauseMs: 120_000,
} as ConstructorParameters<typeof BacklogWatch>[0];

/** Feed probes at the times the watch asks for; `present(t)` says how many sample items are left at t. */
function run(watch: BacklogWatch, start: number, present: (t: number) => number) {
  const probes: number[] = [];
  let t = start + watch.firstWait();
  for (;;) {
    probes.push(t);
    const v = watch.observe(t, present(t));
    if (v.pass) return { at: t, reason: v.reason, probes };
    t += v.waitMs;
  }
}

describe('BacklogWatch', () => {
  it('scans again at once when the sample is gone', () => {
    const w = new BacklogWatch(config, 0, 2000, 32);
    expect(w.observe(1000, 0)).toEqual({ pass: true, reason: 'drained' });
  });

  it('waits through a long backlog and scans again shortly before it drains, after a slow start', () => {
    // 32 sample items; the producers start deleting 8 s after the pass and drain one sample item per 3 s (96 s).
    const present = (t: number) => (t < 8000 ? 32 : Math.max(0, 32 - Math.floor((t - 8000) / 3000)));
    const w = new BacklogWatch(config, 0, 3000, 32);
    const r = run(w, 0, present);
    expect(r.reason).toBe('nearly-drained');
    // Drained at 104 s; the lead is 2 passes + 1 interval = 7 s: scanned again between 104 − 7 − 10 and 104 s.
    expect(r.at).toBeGreaterThan(104_000 - 7000 - 10_000);
    expect(r.at).toBeLessThanOrEqual(104_000);
    // A few dozen probes at most, never more than backlogPassIntervalMs apart.
    expect(r.probes.length).toBeLessThan(40);
    for (let i = 1; i < r.probes.length; i++)
      expect((r.probes[i] as number) - (r.probes[i - 1] as number)).toBeLessThanOrEqual(10_000);
  });

  it('a stall (or items no producer deletes) scans again after backlogPassIntervalMs without progress', () => {
    const stalled = run(new BacklogWatch(config, 0, 500, 32), 0, () => 32);
    expect(stalled.reason).toBe('no-progress');
    expect(stalled.at).toBeGreaterThanOrEqual(10_000);
    expect(stalled.at).toBeLessThan(20_000);
    // Most deleted at once, one item left that no producer deletes.
    const stuck = run(new BacklogWatch(config, 0, 500, 32), 0, (t) => (t < 1500 ? 32 : 1));
    expect(stuck.reason).toBe('no-progress');
    expect(stuck.at).toBeLessThan(20_000);
  });

  it('never pauses past backlogMaxPauseMs', () => {
    // One sample item per 10 s: a 320 s backlog.
    const w = new BacklogWatch(config, 0, 1000, 32);
    const r = run(w, 0, (t) => 32 - Math.floor(t / 10_000));
    expect(r.reason).toBe('max-pause');
    expect(r.at).toBeLessThanOrEqual(120_000);
    expect(r.at).toBeGreaterThanOrEqual(110_000);
  });

  it('probes no faster than the pass interval (100 ms at least)', () => {
    const w = new BacklogWatch({ ...config, passIntervalMs: 0 }, 0, 10, 32);
    expect(w.firstWait()).toBe(100);
    const v = w.observe(100, 32);
    expect(v.pass).toBe(false);
    expect(v.pass ? 0 : v.waitMs).toBeGreaterThanOrEqual(100);
  });
});

describe('Reservoir', () => {
  it('keeps every value up to its size, then a sample of that size', () => {
    const r = new Reservoir<number>(3, () => 0.5);
    [1, 2].forEach((n) => r.offer(n));
    expect(r.items).toEqual([1, 2]);
    [3, 4, 5, 6].forEach((n) => r.offer(n));
    expect(r.items).toHaveLength(3);
    expect(r.population).toBe(6);
    expect(r.items.every((n) => n >= 1 && n <= 6)).toBe(true);
  });

  it('is uniform: each of 10 values lands in a sample of 5 about half the time', () => {
    let seed = 42;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const hits = new Array<number>(10).fill(0);
    for (let round = 0; round < 2000; round++) {
      const r = new Reservoir<number>(5, random);
      for (let i = 0; i < 10; i++) r.offer(i);
      for (const i of r.items) hits[i] = (hits[i] ?? 0) + 1;
    }
    for (const h of hits) expect(Math.abs(h - 1000)).toBeLessThan(120);
  });
});
