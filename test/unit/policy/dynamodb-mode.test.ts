import fc from 'fast-check';
import { decimalToNumber, parseDecimal } from '../../../policy/decimal';
import {
  evaluate,
  isExpired,
  FIVE_YEARS_SECONDS,
  type Evaluation,
  type Item,
  type TableTtlSettings,
} from '../../../policy';

const settings: TableTtlSettings = { policy: { mode: 'dynamodb', attributeName: 'expiresAt' } };
const NOW_S = 1_735_689_600; // 2025-01-01T00:00:00Z
const NOW = NOW_S * 1000;

const withTtl = (value: Item[string]): Item => ({ pk: { S: 'a' }, expiresAt: value });

describe('dynamodb mode', () => {
  it('is not subject when the attribute is absent (FAQ Q8, Q18)', () => {
    expect(evaluate(settings, { pk: { S: 'a' }, other: { N: '1' } }, NOW)).toEqual({
      kind: 'not-subject',
      reason: 'no-attribute',
    });
  });

  it.each<[string, Item[string]]>([
    ['S', { S: String(NOW_S - 10) }],
    ['B', { B: new Uint8Array([1, 2]) }],
    ['SS', { SS: ['1'] }],
    ['NS', { NS: [String(NOW_S - 10)] }],
    ['BS', { BS: [new Uint8Array([1])] }],
    ['L', { L: [{ N: String(NOW_S - 10) }] }],
    ['M', { M: { v: { N: String(NOW_S - 10) } } }],
    ['NULL', { NULL: true }],
    ['BOOL', { BOOL: true }],
  ])('ignores a %s value (only N counts, FAQ Q9)', (_type, value) => {
    expect(evaluate(settings, withTtl(value), NOW)).toEqual({ kind: 'ignored', reason: 'wrong-type' });
  });

  it('ignores a value with two type members set as wrong-type', () => {
    const twoMembers = { N: String(NOW_S - 10), S: 'x' } as unknown as Item[string];
    expect(evaluate(settings, withTtl(twoMembers), NOW)).toEqual({ kind: 'ignored', reason: 'wrong-type' });
  });

  it.each(['', 'abc', '0x10', ' 17', '17 ', 'Infinity', 'NaN', '1e', '.', '1e400', '1.5.2'])(
    'ignores the malformed N %j',
    (text) => {
      expect(evaluate(settings, withTtl({ N: text }), NOW)).toEqual({ kind: 'ignored', reason: 'malformed' });
    },
  );

  it('ignores an N whose text is not a string', () => {
    expect(evaluate(settings, withTtl({ N: 5 as unknown as string }), NOW)).toEqual({
      kind: 'ignored',
      reason: 'malformed',
    });
  });

  it('expires at value × 1000 ms, exactly, with fractional seconds', () => {
    const e = evaluate(settings, withTtl({ N: `${NOW_S}.123` }), NOW);
    expect(e).toEqual({ kind: 'expires', expiresAtMs: NOW + 123, expired: false, looksLikeMillis: false });
    expect(isExpired(evaluate(settings, withTtl({ N: `${NOW_S}.123` }), NOW + 122))).toBe(false);
    expect(isExpired(evaluate(settings, withTtl({ N: `${NOW_S}.123` }), NOW + 123))).toBe(true);
  });

  it('treats 1.5 as 1500 ms when "now" is near it (the 5-year line is relative)', () => {
    expect(evaluate(settings, withTtl({ N: '1.5' }), 1499)).toMatchObject({
      kind: 'expires',
      expired: false,
    });
    expect(evaluate(settings, withTtl({ N: '1.5' }), 1500)).toMatchObject({
      kind: 'expires',
      expiresAtMs: 1500,
      expired: true,
    });
  });

  it('accepts every spelling of a DynamoDB number', () => {
    for (const text of [
      `${NOW_S}`,
      `+${NOW_S}`,
      `${NOW_S}.000`,
      `${NOW_S / 1000}e3`,
      `${NOW_S}E0`,
      `0${NOW_S}`,
    ]) {
      expect(evaluate(settings, withTtl({ N: text }), NOW)).toEqual({
        kind: 'expires',
        expiresAtMs: NOW,
        expired: true,
        looksLikeMillis: false,
      });
    }
  });

  it('is expired exactly at its second, not before', () => {
    expect(evaluate(settings, withTtl({ N: String(NOW_S) }), NOW - 1)).toMatchObject({ expired: false });
    expect(evaluate(settings, withTtl({ N: String(NOW_S) }), NOW)).toMatchObject({ expired: true });
  });

  it('honours a value exactly 5 years old and ignores one a millisecond older (1826 days)', () => {
    expect(FIVE_YEARS_SECONDS).toBe((5 * 365 + 1) * 86_400);
    const line = NOW_S - FIVE_YEARS_SECONDS;
    expect(evaluate(settings, withTtl({ N: String(line) }), NOW)).toMatchObject({
      kind: 'expires',
      expired: true,
    });
    expect(evaluate(settings, withTtl({ N: `${line - 1}.999` }), NOW)).toEqual({
      kind: 'ignored',
      reason: 'older-than-5-years',
    });
  });

  it.each(['0', '-1', '-1735689600', '1', '100000000'])(
    'ignores %s as more than 5 years in the past',
    (text) => {
      expect(evaluate(settings, withTtl({ N: text }), NOW)).toEqual({
        kind: 'ignored',
        reason: 'older-than-5-years',
      });
    },
  );

  it('flags a millisecond value as far-future, not expired', () => {
    const e = evaluate(settings, withTtl({ N: String(NOW - 60_000) }), NOW);
    expect(e).toEqual({
      kind: 'expires',
      expiresAtMs: (NOW - 60_000) * 1000,
      expired: false,
      looksLikeMillis: true,
    });
    expect(evaluate(settings, withTtl({ N: '99999999999' }), NOW)).toMatchObject({ looksLikeMillis: false });
    expect(evaluate(settings, withTtl({ N: '100000000000' }), NOW)).toMatchObject({ looksLikeMillis: true });
  });

  it('uses only the configured top-level attribute (FAQ Q16)', () => {
    const nested: Item = { pk: { S: 'a' }, doc: { M: { expiresAt: { N: String(NOW_S - 1) } } } };
    expect(evaluate(settings, nested, NOW)).toEqual<Evaluation>({
      kind: 'not-subject',
      reason: 'no-attribute',
    });
  });

  it('rejects a "now" that is not a finite epoch time', () => {
    for (const bad of [NaN, Infinity, -Infinity, 1e300]) {
      expect(() => evaluate(settings, withTtl({ N: '1' }), bad)).toThrow(/nowMs must be a finite epoch time/);
    }
  });

  it('gives whole seconds the same verdict as the exact decimal path (the fast path for plain integers)', () => {
    const exact = (text: string, now: number): Evaluation => {
      const d = parseDecimal(text);
      if (!d) throw new Error(text);
      const ms = decimalToNumber(d, 3);
      if (ms < now - FIVE_YEARS_SECONDS * 1000) return { kind: 'ignored', reason: 'older-than-5-years' };
      return {
        kind: 'expires',
        expiresAtMs: ms,
        expired: ms <= now,
        looksLikeMillis: decimalToNumber(d) >= 1e11,
      };
    };
    const plain = fc.oneof(
      fc.integer({ min: 0, max: 999_999_999_999 }).map(String),
      fc.stringMatching(/^\d{1,12}$/),
      fc.integer({ min: NOW_S - 100, max: NOW_S + 100 }).map((n) => `000${n}`.slice(-12)),
    );
    fc.assert(
      fc.property(plain, fc.integer({ min: 0, max: 2 * NOW }), (text, now) => {
        expect(evaluate(settings, withTtl({ N: text }), now)).toEqual(exact(text, now));
      }),
    );
  });
});
