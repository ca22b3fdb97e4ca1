import { silentLogger } from '../../../core/logger';
import type { GuardRecord, GuardStore } from '../../../pipeline/guard';
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
    expect(watch.indexCensusDue('t', 60_000)).toBe(true);
    expect((await watch.indexCensus('t', 4000, 10_000, 60_000)).state).toBe('ARMED');
    expect(watch.indexCensusDue('t', 60_000)).toBe(false);
    // The queries re-read the counted backlog: 4,000 + 4,500 found is not 8,500 of 10,000.
    now = 10_000;
    expect((await watch.indexPage('t', 4000, 10_000, 60_000)).state).toBe('ARMED');
    expect((await watch.indexPage('t', 500, 10_000, 60_000)).state).toBe('ARMED');
    now = 61_000;
    expect(watch.indexCensusDue('t', 60_000)).toBe(true);
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

describe('GuardWatch.indexShardRead (index mode: re-arming a confirmed episode)', () => {
  function confirmedStore(deletes?: GuardRecord['deletes']) {
    const record: GuardRecord = {
      table: 't',
      state: 'CONFIRMED',
      cancelled: false,
      ...(deletes ? { deletes } : {}),
    };
    const rearmed: number[] = [];
    const store = {
      get: () => Promise.resolve({ ...record }),
      pause: () => Promise.resolve(undefined),
      rearm: () => {
        rearmed.push(1);
        record.state = 'ARMED';
        return Promise.resolve({ ...record });
      },
    } as unknown as GuardStore;
    return { store, rearmed, record };
  }
  const limits = { maxExpiredFraction: 0.5, minItemsForFraction: 10, maxDeletesPerMinute: 1_000_000 };

  it('does not re-arm when guard windows end with nothing found: a window is not a pass', async () => {
    let now = 0;
    const { store, rearmed } = confirmedStore();
    const watch = new GuardWatch(store, limits, silentLogger, 0, () => now);
    // The shards' queries continue after the confirmed backlog they marked: windows go by without finds.
    for (; now < 10_000; now += 2100) await watch.indexPage('t', 0, 0, 2000);
    expect(rearmed).toEqual([]);
  });

  it('re-arms once every held shard was read from its lowest expiry and the pass looks normal', async () => {
    let now = 0;
    const { store, rearmed, record } = confirmedStore();
    const watch = new GuardWatch(store, limits, silentLogger, 0, () => now);
    // The confirmed backlog (12 of a table of unknown size) is still there: not over.
    await watch.indexShardRead('t', 0, 7, now, [0, 1], 0);
    expect(rearmed).toEqual([]);
    now = 1000;
    await watch.indexShardRead('t', 1, 5, now, [0, 1], 0);
    expect(rearmed).toEqual([]);
    // The producers deleted it; shard 0 read again, empty: shard 1 has not been, so the pass is not complete.
    now = 2000;
    await watch.indexShardRead('t', 0, 0, now, [0, 1], 0);
    expect(rearmed).toEqual([]);
    now = 3000;
    await watch.indexShardRead('t', 1, 0, now, [0, 1], 0);
    expect(rearmed).toEqual([1]);
    expect(record.state).toBe('ARMED');
  });

  it('ignores a read that began before the current pass', async () => {
    let now = 0;
    const { store, rearmed } = confirmedStore();
    const watch = new GuardWatch(store, limits, silentLogger, 0, () => now);
    now = 1000;
    await watch.indexShardRead('t', 0, 12, 0, [0, 1], 0);
    now = 2000;
    await watch.indexShardRead('t', 1, 12, 1500, [0, 1], 0);
    // Judged (over: no re-arm) at 2,000; a read of shard 0 that began at 1,800 saw the old backlog: not counted.
    now = 3000;
    await watch.indexShardRead('t', 0, 0, 1800, [0, 1], 0);
    await watch.indexShardRead('t', 1, 0, 2500, [0, 1], 0);
    expect(rearmed).toEqual([]);
    await watch.indexShardRead('t', 0, 0, 2600, [0, 1], 0);
    expect(rearmed).toEqual([1]);
  });

  it('judges the finds against the share of the table and keeps the episode while deletions run over the rate', async () => {
    const now = 120_000;
    const minute = Math.floor(now / 60_000);
    const busy = confirmedStore({ minute, count: 2_000_000 });
    const calm = confirmedStore();
    for (const { store } of [busy, calm]) {
      const watch = new GuardWatch(store, limits, silentLogger, 0, () => now);
      // 12 still due of 10,000 items behind this process's shards: normal.
      await watch.indexShardRead('t', 0, 12, now, [0], 10_000);
    }
    expect(busy.rearmed).toEqual([]);
    expect(calm.rearmed).toEqual([1]);
  });
});
