import {
  evaluate,
  expiryQueryRange,
  expiryWindowRange,
  presentVerdict,
  ttlInstantOf,
  type Item,
  type TableTtlSettings,
} from '../../../policy';
import { mongoTtl } from '../../support/ttl-settings';
import { n } from '../../support/attributes';

const dynamo: TableTtlSettings = {
  policy: { mode: 'dynamodb', attributeName: 'expiresAt' },
  legalHoldAttribute: 'hold',
};
const cosmos: TableTtlSettings = {
  policy: { mode: 'cosmos', defaultTtl: 60, ttlAttribute: 'ttl', lastWriteAttribute: '_ts' },
};

const T = 1_714_564_800_000; // 2024-05-01T12:00:00Z
const W = { fromMs: T - 3_600_000, toMs: T + 3_600_000 };

describe('ttlInstantOf: the TTL instant of a deleted image', () => {
  it('is the instant that made it expire, in each mode, exact to the millisecond', () => {
    expect(ttlInstantOf(dynamo, { expiresAt: n('1714564800.25') }, T + 5000)).toBe(T + 250);
    expect(ttlInstantOf(cosmos, { _ts: n(T / 1000 - 60) }, T + 5000)).toBe(T);
    expect(ttlInstantOf(mongoTtl(3600, 'epoch-millis', 'at'), { at: n(T - 3_600_000) }, T + 1)).toBe(T);
  });
  it('keeps the instant of a held image; none when the settings give none', () => {
    expect(ttlInstantOf(dynamo, { expiresAt: n(T / 1000), hold: { BOOL: true } }, T + 1)).toBe(T);
    expect(ttlInstantOf(dynamo, { other: n(1) }, T)).toBeNull();
    expect(ttlInstantOf(dynamo, { expiresAt: { S: 'soon' } }, T)).toBeNull();
  });
  it('is judged at the deletion time: a value older than five years then would be ignored', () => {
    const sixYears = 6 * 366 * 86_400_000;
    expect(ttlInstantOf(dynamo, { expiresAt: n((T - sixYears) / 1000) }, T)).toBeNull();
    expect(ttlInstantOf(dynamo, { expiresAt: n((T - sixYears) / 1000) }, T - sixYears + 1000)).toBe(
      T - sixYears,
    );
  });
});

describe('presentVerdict: an item that still exists', () => {
  const item = (sec: number, extra: Item = {}): Item => ({ expiresAt: n(sec), ...extra });
  it('expired in the window: expired; the window is [from, to)', () => {
    expect(presentVerdict(dynamo, item(T / 1000), W, T + 10)).toEqual({ kind: 'expired', expiresAtMs: T });
    expect(presentVerdict(dynamo, item(W.fromMs / 1000), W, T)).toMatchObject({ kind: 'expired' });
    expect(presentVerdict(dynamo, item(W.fromMs / 1000 - 1), W, T)).toBeNull();
    expect(presentVerdict(dynamo, item(W.toMs / 1000), W, W.toMs + 10)).toBeNull();
  });
  it('not expired yet (the window reaches into the future): not reported', () => {
    expect(presentVerdict(dynamo, item(T / 1000 + 60), W, T)).toBeNull();
  });
  it('held: reported as held, once its instant has passed', () => {
    expect(presentVerdict(dynamo, item(T / 1000, { hold: { BOOL: true } }), W, T)).toEqual({
      kind: 'held',
      expiresAtMs: T,
    });
    expect(presentVerdict(dynamo, item(T / 1000 + 60, { hold: { BOOL: true } }), W, T)).toBeNull();
  });
  it('malformed, missing or ignored TTL values are never overdue (as DynamoDB)', () => {
    for (const bad of [{ expiresAt: { S: String(T / 1000) } }, { expiresAt: { NULL: true } }, {}] as Item[])
      expect(presentVerdict(dynamo, bad, W, T + 1)).toBeNull();
  });
});

describe('expiryWindowRange: the index sort keys that can hold the window', () => {
  it('holds exactly the sort-key values whose expiry evaluate puts in the window, per mode and format', () => {
    const cases: Array<[TableTtlSettings, string, (ms: number) => Item]> = [
      [dynamo, 'expiresAt', (ms) => ({ expiresAt: n(ms / 1000) })],
      [mongoTtl(3600, 'epoch-seconds', 'at'), 'at', (ms) => ({ at: n((ms - 3_600_000) / 1000) })],
      [mongoTtl(3600, 'epoch-millis', 'at'), 'at', (ms) => ({ at: n(ms - 3_600_000) })],
    ];
    for (const [settings, attr, itemAt] of cases) {
      const range = expiryWindowRange(settings, W.fromMs, W.toMs)!;
      for (const ms of [W.fromMs, T, W.toMs]) {
        const v = Number(itemAt(ms)[attr]?.N);
        expect(v).toBeGreaterThanOrEqual(Number(range.low.N));
        expect(v).toBeLessThanOrEqual(Number(range.high.N));
        const verdict = evaluate(settings, itemAt(ms), W.toMs);
        expect(verdict).toMatchObject({ expiresAtMs: ms });
      }
      expect(Number(itemAt(W.fromMs - 1000)[attr]?.N)).toBeLessThan(Number(range.low.N));
      expect(Number(itemAt(W.toMs + 1000)[attr]?.N)).toBeGreaterThan(Number(range.high.N));
    }
  });
  it('cosmos: on the derived expiry in seconds; off: null', () => {
    expect(expiryWindowRange(cosmos, T, T + 1500)).toEqual({ low: n(T / 1000), high: n(T / 1000 + 1.5) });
    const off: TableTtlSettings = {
      policy: { ...cosmos.policy, defaultTtl: null } as TableTtlSettings['policy'],
    };
    expect(expiryWindowRange(off, T, T + 1)).toBeNull();
  });
  it('iso-8601: widened by the largest zone offset, so a string with an offset inside the window is read', () => {
    const range = expiryWindowRange(mongoTtl(3600, 'iso-8601', 'at'), W.fromMs, W.toMs)!;
    // 12:00Z expiry = 11:00Z time field, written at +14:00 (next day 01:00) and at -12:00.
    for (const s of ['2024-05-02T01:00:00+14:00', '2024-04-30T23:00:00-12:00', '2024-05-01T11:00:00Z']) {
      expect(s >= (range.low.S as string) && s <= (range.high.S as string)).toBe(true);
    }
    // The unwidened cutoff of the scanner would have missed the +14:00 one at the window's end.
    expect(
      '2024-05-02T01:00:00+14:00' >
        (expiryQueryRange(mongoTtl(3600, 'iso-8601', 'at'), W.toMs)?.high.S as string),
    ).toBe(true);
  });
});
