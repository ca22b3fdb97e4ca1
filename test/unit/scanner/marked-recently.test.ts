import { MarkedRecently } from '../../../scanner/marked-recently';

describe('MarkedRecently', () => {
  it('remembers a verdict for ttlMs, per table and expiry instant', () => {
    const m = new MarkedRecently(60_000, 100);
    m.add('t', [{ sk: 't#a', expiresAtMs: 1000 }], 0);
    expect(m.has('t', 't#a', 1000, 59_999)).toBe(true);
    expect(m.has('t', 't#a', 2000, 1)).toBe(false); // TTL changed: a new verdict
    expect(m.has('u', 't#a', 1000, 1)).toBe(false);
    expect(m.has('t', 't#b', 1000, 1)).toBe(false);
    expect(m.has('t', 't#a', 1000, 60_000)).toBe(false);
    expect(m.size('t')).toBe(0); // an expired entry is dropped when seen
  });

  it('forgets a table (its marks were discarded) and keeps at most maxEntries, oldest out', () => {
    const m = new MarkedRecently(60_000, 3);
    m.add(
      't',
      ['a', 'b', 'c'].map((k) => ({ sk: k, expiresAtMs: 1 })),
      0,
    );
    m.add('t', [{ sk: 'a', expiresAtMs: 1 }], 10); // refreshed: now the newest
    m.add('t', [{ sk: 'd', expiresAtMs: 1 }], 20);
    expect(['a', 'b', 'c', 'd'].map((k) => m.has('t', k, 1, 30))).toEqual([true, false, true, true]);
    m.forgetTable('t');
    expect(m.has('t', 'a', 1, 30)).toBe(false);
  });

  it('ttlMs 0 disables it', () => {
    const m = new MarkedRecently(0, 10);
    m.add('t', [{ sk: 'a', expiresAtMs: 1 }], 0);
    expect(m.has('t', 'a', 1, 0)).toBe(false);
  });

  it('markedAt tells when a verdict was last marked, however long ago, and forgets nothing', () => {
    const m = new MarkedRecently(60_000, 10);
    m.add('t', [{ sk: 't#a', expiresAtMs: 1000 }], 5);
    m.add('t', [{ sk: 't#a', expiresAtMs: 1000 }], 50);
    expect(m.markedAt('t', 't#a', 1000)).toBe(50);
    expect(m.markedAt('t', 't#a', 2000)).toBeUndefined(); // another verdict
    expect(m.markedAt('u', 't#a', 1000)).toBeUndefined();
    expect(m.markedAt('t', 't#a', 1000)).toBe(50); // long past ttlMs: still known, still there
    expect(m.size('t')).toBe(1);
    m.forgetTable('t');
    expect(m.markedAt('t', 't#a', 1000)).toBeUndefined();
  });
});
