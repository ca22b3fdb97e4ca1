import { tryLock, waitForLock, type HeldLock } from '../../../archive/lock';
import { LeaseLostError } from '../../../core/errors';
import { MemoryStorage } from '../../support/archive-fixture';

/** A process id this machine's kernel says is gone, in decision 0020's owner form. */
function deadOwner(live: string): string {
  return live.replace(/:(\d+):/, ':2147483646:');
}

const held = async (p: Promise<{ held: HeldLock } | { holder: unknown }>): Promise<HeldLock> => {
  const got = await p;
  if (!('held' in got)) throw new Error('not taken');
  return got.held;
};

describe('the table lock of the archive (docs/decisions/0037)', () => {
  it('one holder at a time; released, the next epoch is taken; another table is free', async () => {
    const storage = new MemoryStorage();
    const a = await held(tryLock(storage, { table: 'orders', purpose: 'compact' }));
    const b = await tryLock(storage, { table: 'orders', purpose: 'erase' });
    expect(b).toMatchObject({ holder: { owner: a.owner, purpose: 'compact', epoch: 1 } });
    await held(tryLock(storage, { table: 'users', purpose: 'compact' })).then((l) => l.release());
    a.assertValid();
    await a.release();
    const c = await held(tryLock(storage, { table: 'orders', purpose: 'erase' }));
    expect([...storage.objects.keys()].filter((k) => k.startsWith('_lock/orders/'))).toEqual([
      '_lock/orders/00000000000000000001.json',
      '_lock/orders/00000000000000000002.json',
    ]);
    await c.release();
  });

  it('takes over at once from a holder this machine says is dead, and after the lease from any other', async () => {
    const storage = new MemoryStorage();
    let now = 1_000_000;
    const first = await held(tryLock(storage, { table: 'orders', purpose: 'compact', now: () => now }));
    const dead = await held(
      tryLock(storage, { table: 'users', purpose: 'compact', owner: deadOwner(first.owner), now: () => now }),
    );
    expect('held' in (await tryLock(storage, { table: 'users', purpose: 'erase', now: () => now }))).toBe(
      true,
    );
    void dead;
    expect('holder' in (await tryLock(storage, { table: 'orders', purpose: 'erase', now: () => now }))).toBe(
      true,
    );
    now += 60_000 + 5_001;
    // The first holder's lease ran out: it is no longer valid, and another takes the table.
    expect(() => first.assertValid()).toThrow(LeaseLostError);
    expect('held' in (await tryLock(storage, { table: 'orders', purpose: 'erase', now: () => now }))).toBe(
      true,
    );
  });

  it('a waiter leaves a note the holder sees, and gets the lock once it is released', async () => {
    const storage = new MemoryStorage();
    const compaction = await held(tryLock(storage, { table: 'orders', purpose: 'compact' }));
    expect(await compaction.waited()).toBe(false);
    const holders: unknown[] = [];
    const waiting = waitForLock(storage, {
      table: 'orders',
      purpose: 'erase',
      onWait: (h) => holders.push(h),
    });
    while (!(await compaction.waited())) await new Promise((r) => setTimeout(r, 10));
    await compaction.release();
    const erasure = await waiting;
    expect(holders).toEqual([expect.objectContaining({ purpose: 'compact' })]);
    expect([...storage.objects.keys()].filter((k) => k.includes('/wait/'))).toEqual([]);
    await erasure.release();
  });
});
