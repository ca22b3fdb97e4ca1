import { ValidationError } from '../../../core/errors';
import { TokenBucket } from '../../../scanner/rate-limiter';

/** A fake clock: sleeping advances time, so the test measures the limiter's pacing, not the machine. */
function fakeClock() {
  let t = 0;
  const slept: number[] = [];
  return {
    now: () => t,
    sleep: async (ms: number) => {
      slept.push(ms);
      t += ms;
    },
    advance: (ms: number) => (t += ms),
    slept,
  };
}

describe('TokenBucket', () => {
  it('paces takers to the rate: 1000 items at 100/s with a 100-item burst take 9 s', async () => {
    const c = fakeClock();
    const b = new TokenBucket({ ratePerSec: 100, now: c.now, sleep: c.sleep });
    for (let i = 0; i < 20; i++) await b.take(50);
    expect(c.now()).toBeGreaterThanOrEqual(9000);
    expect(c.now()).toBeLessThanOrEqual(9010);
  });

  it('lets a burst through without waiting', async () => {
    const c = fakeClock();
    const b = new TokenBucket({ ratePerSec: 100, now: c.now, sleep: c.sleep });
    await b.take(100);
    expect(c.slept).toEqual([]);
  });

  it('paces a request larger than the burst instead of refusing it', async () => {
    const c = fakeClock();
    const b = new TokenBucket({ ratePerSec: 100, now: c.now, sleep: c.sleep });
    await b.take(500);
    expect(c.now()).toBe(4000);
  });

  it('refunds unused tokens (a short page)', async () => {
    const c = fakeClock();
    const b = new TokenBucket({ ratePerSec: 100, now: c.now, sleep: c.sleep });
    await b.take(100);
    b.refund(90);
    await b.take(90);
    expect(c.slept).toEqual([]);
  });

  it('halves the rate on throttling, down to the floor, and recovers additively', () => {
    const b = new TokenBucket({ ratePerSec: 640, minFraction: 1 / 64 });
    b.throttled();
    expect(b.rate).toBe(320);
    for (let i = 0; i < 20; i++) b.throttled();
    expect(b.rate).toBe(10);
    b.succeeded();
    expect(b.rate).toBe(10 + 32);
    for (let i = 0; i < 100; i++) b.succeeded();
    expect(b.rate).toBe(640);
  });

  it('a throttled bucket paces slower', async () => {
    const c = fakeClock();
    const b = new TokenBucket({ ratePerSec: 100, now: c.now, sleep: c.sleep });
    await b.take(100);
    b.throttled();
    await b.take(100);
    expect(c.now()).toBe(2000);
  });

  it('concurrent takers share the rate', async () => {
    // Time stands still while both wait, as when two segments ask at the same instant.
    const slept: number[] = [];
    const b = new TokenBucket({ ratePerSec: 100, now: () => 0, sleep: async (ms) => void slept.push(ms) });
    await b.take(100);
    await Promise.all([b.take(100), b.take(100)]);
    // The second taker saw the first one's debt: 1 s and 2 s of waiting.
    expect(slept.sort((x, y) => x - y)).toEqual([1000, 2000]);
  });

  it('refuses a non-positive rate', () => {
    expect(() => new TokenBucket({ ratePerSec: 0 })).toThrow(ValidationError);
  });
});
