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
    expect(paused[0]).toMatch(/^5001 expired items due in the expiry index, of about 10000 items/);
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

  it('counts the table once per window before marking; found and census are judged apart, not added up', async () => {
    let now = 0;
    const { store, paused } = fakeStore();
    const watch = new GuardWatch(store, limits, silentLogger, 0, () => now);
    // A new window wants a census; once counted, not again until the window ends.
    expect(await watch.indexCensusDue('t', 60_000)).toBe(true);
    expect((await watch.indexCensus('t', 4000, 10_000, 60_000)).state).toBe('ARMED');
    expect(await watch.indexCensusDue('t', 60_000)).toBe(false);
    // The queries re-read the counted backlog: 4,000 + 4,500 found is not 8,500 of 10,000.
    now = 10_000;
    expect((await watch.indexPage('t', 4000, 10_000, 60_000)).state).toBe('ARMED');
    expect((await watch.indexPage('t', 500, 10_000, 60_000)).state).toBe('ARMED');
    now = 61_000;
    expect(await watch.indexCensusDue('t', 60_000)).toBe(true);
    expect(paused).toEqual([]);
  });

  it('pauses on a census over the fraction, before the first page is judged', async () => {
    const { store, paused } = fakeStore();
    const watch = new GuardWatch(store, limits, silentLogger, 0, () => 0);
    expect((await watch.indexCensus('t', 5001, 10_000, 60_000)).state).toBe('PAUSED');
    expect(paused[0]).toMatch(
      /^5001 expired items due in the expiry index, of about 10000 items \(ItemCount\)/,
    );
  });

  it("pauses on the shards' finds over their share even when the census was under the limit", async () => {
    let now = 0;
    const { store } = fakeStore();
    const watch = new GuardWatch(store, limits, silentLogger, 0, () => now);
    await watch.indexCensus('t', 100, 100_000, 60_000);
    // This process holds a quarter of the shards: 25,000 items; 12,501 of them expire within the window.
    now = 1000;
    expect((await watch.indexPage('t', 12_501, 25_000, 60_000)).state).toBe('PAUSED');
  });

  it('judges a table whose size is not known yet (ItemCount 0) as if the backlog were all of it', async () => {
    const { store, paused } = fakeStore();
    const watch = new GuardWatch(store, limits, silentLogger, 0, () => 0);
    expect((await watch.indexCensus('t', 999, 0, 60_000)).state).toBe('ARMED');
    expect((await watch.indexCensus('t', 1000, 0, 60_000)).state).toBe('PAUSED');
    expect(paused[0]).toMatch(/^1000 expired items .* of a table size not known yet \(ItemCount 0\)/);
  });
});
