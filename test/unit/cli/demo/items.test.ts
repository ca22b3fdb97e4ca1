import { DEMO_SETTINGS, demoItems } from '../../../../cli/demo/items';
import { evaluate, isExpired } from '../../../../policy';

/** The demo's claims about its items must be what the policy engine (the scanner's judge) says. */
describe('demo items', () => {
  const nowS = 1_800_000_000;
  const items = demoItems(nowS);

  it('has unique keys and every kind of item the README promises', () => {
    expect(new Set(items.map((i) => i.id)).size).toBe(items.length);
    expect(new Set(items.map((i) => i.fate))).toEqual(
      new Set(['expires', 'future', 'malformed', 'held', 'no-ttl']),
    );
  });

  it.each(demoItems(1_800_000_000).map((i) => [i.id, i.fate, i] as const))('%s (%s)', (_id, fate, demo) => {
    const atStart = evaluate(DEMO_SETTINGS, demo.item, nowS * 1000);
    const after20s = evaluate(DEMO_SETTINGS, demo.item, (nowS + 20) * 1000);
    const nextYear = evaluate(DEMO_SETTINGS, demo.item, (nowS + 365 * 86_400) * 1000);
    switch (fate) {
      case 'expires':
        // Expired within the demo's first seconds, so the watch stage sees all of them go.
        expect(isExpired(after20s)).toBe(true);
        break;
      case 'future':
        expect(isExpired(after20s)).toBe(false);
        expect(atStart.kind).toBe('expires');
        break;
      case 'malformed':
        expect(atStart.kind).toBe('ignored');
        expect(isExpired(nextYear)).toBe(false);
        break;
      case 'held':
        expect(atStart.kind).toBe('held');
        expect(isExpired(nextYear)).toBe(false);
        break;
      case 'no-ttl':
        expect(atStart).toEqual({ kind: 'not-subject', reason: 'no-attribute' });
        break;
    }
  });
});
