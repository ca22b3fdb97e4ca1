import fc from 'fast-check';
import { fairShare, planLeases, type LeaseRow } from '../../../core/leases';

const names = Array.from({ length: 8 }, (_, i) => `t#${i}`);
const NOW = 1_000_000;

describe('fair share', () => {
  it('is ceil(total / owners)', () => {
    expect(fairShare(8, 1)).toBe(8);
    expect(fairShare(8, 2)).toBe(4);
    expect(fairShare(8, 3)).toBe(3);
    expect(fairShare(10, 4)).toBe(3);
    expect(fairShare(0, 3)).toBe(0);
    expect(fairShare(5, 0)).toBe(5);
  });

  it('property: owners taking at most their share cover every unit', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 1, max: 500 }), (total, owners) => {
        const share = fairShare(total, owners);
        expect(share * owners).toBeGreaterThanOrEqual(total);
        if (total > 0) expect((share - 1) * owners).toBeLessThan(total);
      }),
    );
  });
});

describe('planLeases', () => {
  it('a lone process takes everything free', () => {
    const plan = planLeases({ names, rows: [], liveMembers: [], me: 'a', held: new Set(), now: NOW });
    expect(plan.share).toBe(8);
    expect(plan.acquire.sort()).toEqual([...names].sort());
    expect(plan.release).toEqual([]);
  });

  it('a newcomer counts through its member row, and the holder gives back the excess', () => {
    const rows: LeaseRow[] = names.map((name) => ({ name, owner: 'a', expiresAt: NOW + 5000 }));
    const holder = planLeases({
      names,
      rows,
      liveMembers: ['a', 'b'],
      me: 'a',
      held: new Set(names),
      now: NOW,
    });
    expect(holder.share).toBe(4);
    expect(holder.release).toHaveLength(4);
    const newcomer = planLeases({ names, rows, liveMembers: ['a', 'b'], me: 'b', held: new Set(), now: NOW });
    expect(newcomer.acquire).toEqual([]); // nothing free until a hands over
    const afterHandOver = rows.filter((r) => !holder.release.includes(r.name));
    const again = planLeases({
      names,
      rows: afterHandOver,
      liveMembers: ['a', 'b'],
      me: 'b',
      held: new Set(),
      now: NOW,
    });
    expect(again.acquire.sort()).toEqual([...holder.release].sort());
  });

  it("takes over a dead owner's leases once they expire", () => {
    const rows: LeaseRow[] = names.map((name, i) => ({
      name,
      owner: i < 4 ? 'a' : 'dead',
      expiresAt: i < 4 ? NOW + 5000 : NOW - 1,
    }));
    const held = new Set(names.slice(0, 4));
    const plan = planLeases({ names, rows, liveMembers: ['a'], me: 'a', held, now: NOW });
    expect(plan.share).toBe(8);
    expect(plan.acquire.sort()).toEqual(names.slice(4).sort());
  });

  it('does not take a live lease of another owner', () => {
    const rows: LeaseRow[] = [{ name: 't#0', owner: 'b', expiresAt: NOW + 1 }];
    const plan = planLeases({ names, rows, liveMembers: [], me: 'a', held: new Set(), now: NOW });
    expect(plan.acquire).not.toContain('t#0');
    expect(plan.share).toBe(4); // b counts as live through its lease
  });

  it('treats its own row from an earlier incarnation as free', () => {
    const rows: LeaseRow[] = [{ name: 't#0', owner: 'a', expiresAt: NOW + 5000 }];
    const plan = planLeases({ names, rows, liveMembers: ['a'], me: 'a', held: new Set(), now: NOW });
    expect(plan.acquire).toContain('t#0');
  });

  it('releases leases of units no longer wanted (TTL disabled)', () => {
    const plan = planLeases({
      names: names.slice(0, 2),
      rows: [],
      liveMembers: [],
      me: 'a',
      held: new Set(['t#0', 't#7']),
      now: NOW,
    });
    expect(plan.release).toEqual(['t#7']);
    expect(plan.acquire).toEqual(['t#1']);
  });

  it('property: with N owners converging, nobody exceeds its share and nothing stays unowned', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 40 }), (owners, total) => {
        const all = Array.from({ length: total }, (_, i) => `u#${i}`);
        const members = Array.from({ length: owners }, (_, i) => `o${i}`);
        const heldBy = new Map<string, Set<string>>(members.map((m) => [m, new Set()]));
        // Rounds of: every owner plans against the current rows, releases, then acquires if still free.
        for (let round = 0; round < 4; round++) {
          for (const me of members) {
            const rows: LeaseRow[] = [...heldBy].flatMap(([o, s]) =>
              [...s].map((name) => ({ name, owner: o, expiresAt: NOW + 1 })),
            );
            const mine = heldBy.get(me)!;
            const plan = planLeases({ names: all, rows, liveMembers: members, me, held: mine, now: NOW });
            for (const r of plan.release) mine.delete(r);
            for (const a of plan.acquire) {
              if (![...heldBy.values()].some((s) => s.has(a))) mine.add(a);
            }
          }
        }
        const share = fairShare(total, owners);
        const owned = [...heldBy.values()].flatMap((s) => [...s]);
        expect(new Set(owned).size).toBe(owned.length); // no unit twice
        expect(owned.length).toBe(total); // every unit owned
        for (const s of heldBy.values()) expect(s.size).toBeLessThanOrEqual(share);
      }),
    );
  });
});

describe('planLeases: owners proven dead', () => {
  const rows: LeaseRow[] = names.map((name) => ({ name, owner: 'dead', expiresAt: NOW + 10_000 }));

  it('unexpired rows of a dead owner are free, named for the take-over, and the dead owner holds no share', () => {
    const plan = planLeases({
      names,
      rows,
      liveMembers: ['dead'],
      me: 'a',
      held: new Set(),
      now: NOW,
      deadOwners: new Set(['dead']),
    });
    expect(plan.liveOwners).toBe(1);
    expect(plan.share).toBe(8);
    expect(plan.acquire.sort()).toEqual([...names].sort());
    expect([...plan.takeOverFrom.entries()].sort()).toEqual(names.map((n) => [n, 'dead']).sort());
  });

  it('without the proof the same rows are waited out', () => {
    const plan = planLeases({ names, rows, liveMembers: ['dead'], me: 'a', held: new Set(), now: NOW });
    expect(plan.acquire).toEqual([]);
    expect(plan.takeOverFrom.size).toBe(0);
  });

  it('an expired row needs no take-over condition', () => {
    const expired = rows.map((r) => ({ ...r, expiresAt: NOW - 1 }));
    const plan = planLeases({
      names,
      rows: expired,
      liveMembers: [],
      me: 'a',
      held: new Set(),
      now: NOW,
      deadOwners: new Set(['dead']),
    });
    expect(plan.acquire).toHaveLength(8);
    expect(plan.takeOverFrom.size).toBe(0);
  });
});
