import { addressOf, type Mark } from '../../../pipeline/marks';
import { BellThrottle, PendingMarks } from '../../../scanner/mark-batching';

function mark(key: string, shards = 4, expiresAtMs = 1000): Mark {
  return { address: addressOf('t', { pk: { S: key } }, shards), markedAtMs: 0, expiresAtMs };
}

/** Keys that land in `shard` (of `shards`). */
function keysIn(shard: number, n: number, shards = 4): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < n; i++)
    if (addressOf('t', { pk: { S: `k${i}` } }, shards).shard === shard) out.push(`k${i}`);
  return out;
}

describe('PendingMarks', () => {
  it('gathers pages until a shard holds perShardLimit marks, then says so', () => {
    const p = new PendingMarks(3);
    const [a, b, c] = keysIn(0, 3);
    const [x] = keysIn(1, 1);
    expect(p.add([mark(a as string), mark(x as string)], 10)).toBe(false);
    expect(p.add([mark(b as string)], 20)).toBe(false);
    expect(p.oldestAtMs).toBe(10);
    expect(p.add([mark(c as string)], 30)).toBe(true);
    expect(p.size).toBe(4);
    expect(p.take().map((m) => m.address.keys.pk?.S)).toEqual([a, x, b, c]);
    expect(p.size).toBe(0);
    expect(p.oldestAtMs).toBeUndefined();
  });

  it('keeps one mark per item and expiry (a page handed twice), a changed expiry is another', () => {
    const p = new PendingMarks(2);
    const [a] = keysIn(0, 1);
    expect(p.add([mark(a as string)], 0)).toBe(false);
    expect(p.add([mark(a as string)], 1)).toBe(false);
    expect(p.size).toBe(1);
    expect(p.add([mark(a as string, 4, 2000)], 2)).toBe(true);
    expect(p.size).toBe(2);
  });

  it('an empty page starts no clock', () => {
    const p = new PendingMarks(2);
    p.add([], 5);
    expect(p.oldestAtMs).toBeUndefined();
  });
});

describe('BellThrottle', () => {
  it('rings a shard at once, then at most once per interval, the last ring trailing', () => {
    const b = new BellThrottle(1000);
    expect(b.request([0, 1], 0)).toEqual([0, 1]);
    expect(b.nextDueAt()).toBeUndefined();
    // Marks within the interval: nothing now, one trailing ring each when the interval ends.
    expect(b.request([0], 100)).toEqual([]);
    expect(b.request([0, 1], 400)).toEqual([]);
    expect(b.request([2], 400)).toEqual([2]); // never rung: at once
    expect(b.nextDueAt()).toBe(1000);
    expect(b.due(999)).toEqual([]);
    expect(b.due(1000).sort()).toEqual([0, 1]);
    expect(b.nextDueAt()).toBeUndefined();
    // The trailing ring counts as a ring: the next marks wait for its interval.
    expect(b.request([0], 1500)).toEqual([]);
    expect(b.nextDueAt()).toBe(2000);
    expect(b.request([0], 2100)).toEqual([0]); // due anyway: rung by the request, no longer waiting
    expect(b.nextDueAt()).toBeUndefined();
  });

  it('a failed ring waits for its interval; drain returns everything waiting', () => {
    const b = new BellThrottle(1000);
    expect(b.request([3], 0)).toEqual([3]);
    b.failed([3]);
    expect(b.nextDueAt()).toBe(1000);
    b.request([4], 10);
    b.request([4], 20);
    expect(b.drain(30).sort()).toEqual([3, 4]);
    expect(b.nextDueAt()).toBeUndefined();
  });

  it('interval 0 rings after every write', () => {
    const b = new BellThrottle(0);
    expect(b.request([1], 0)).toEqual([1]);
    expect(b.request([1], 0)).toEqual([1]);
  });
});
