import { silentLogger } from '../../../core/logger';
import type { GuardRecord, GuardStore } from '../../../producer/guard';
import { splitName } from '../../../scanner';
import { GuardWatch } from '../../../scanner/guard-watch';

describe('scanner lease names', () => {
  it('tells scan segments from expiry-index shards, also for table names with #', () => {
    expect(splitName('orders#3')).toEqual({ table: 'orders', segment: 3 });
    expect(splitName('orders#q7')).toEqual({ table: 'orders', segment: -1, indexShard: 7 });
    expect(splitName('a#b#q0')).toEqual({ table: 'a#b', segment: -1, indexShard: 0 });
  });
});

describe('GuardWatch.indexPage (index mode)', () => {
  function fakeStore() {
    const record: GuardRecord = { table: 't', state: 'ARMED', cancelled: false };
    const paused: string[] = [];
    const store = {
      get: () => Promise.resolve({ ...record }),
      pause: (_t: string, reason: string) => {
        paused.push(reason);
        record.state = 'PAUSED';
        return Promise.resolve({ ...record });
      },
      rearm: () => Promise.resolve(undefined),
    } as unknown as GuardStore;
    return { store, paused };
  }
  const limits = { maxExpiredFraction: 0.5, minItemsForFraction: 1000, maxDeletesPerMinute: 1_000_000 };

  it('pauses when the expired items found within the window exceed the fraction of the share of the table', async () => {
    let now = 0;
    const { store, paused } = fakeStore();
    const watch = new GuardWatch(store, limits, silentLogger, 0, () => now);
    // 10,000 items stand behind this process's shards; 4,000 expire: fine; 1,001 more in the same window: pause.
    expect((await watch.indexPage('t', 4000, 10_000, 60_000)).state).toBe('ARMED');
    now = 30_000;
    expect((await watch.indexPage('t', 1001, 10_000, 60_000)).state).toBe('PAUSED');
    expect(paused[0]).toMatch(/5001 of 10000/);
  });

  it('starts a new window after windowMs, and does not judge small tables', async () => {
    let now = 0;
    const { store, paused } = fakeStore();
    const watch = new GuardWatch(store, limits, silentLogger, 0, () => now);
    await watch.indexPage('t', 4000, 10_000, 60_000);
    now = 61_000;
    expect((await watch.indexPage('t', 4000, 10_000, 60_000)).state).toBe('ARMED');
    expect((await watch.indexPage('u', 900, 900, 60_000)).state).toBe('ARMED');
    expect(paused).toEqual([]);
  });
});
