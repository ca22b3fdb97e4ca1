import fc from 'fast-check';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import {
  evaluate,
  filterUnexpired,
  isExpired,
  parseIso8601,
  stillExpiredCondition,
  FIVE_YEARS_MS,
  type Item,
  type TableTtlSettings,
} from '../../../policy';
import { decimalToNumber, millisToSecondsText, parseDecimal } from '../../../policy/decimal';

const YEAR_2000 = Date.UTC(2000, 0, 1);
const YEAR_2100 = Date.UTC(2100, 0, 1);
const arbNow = fc.integer({ min: YEAR_2000, max: YEAR_2100 });

/** Seconds text near a time (so expiry decisions are exercised), with 0-3 decimals or an exponent. */
const arbSecondsNear = (centreMs: number, spreadMs: number): fc.Arbitrary<string> =>
  fc
    .tuple(
      fc.integer({ min: centreMs - spreadMs, max: centreMs + spreadMs }),
      fc.constantFrom(0, 1, 2, 3, -1), // decimals, or -1 for an exponent form
    )
    .map(([ms, style]) => {
      if (style === -1) return `${Math.floor(ms / 1000) / 1000}e3`;
      const text = millisToSecondsText(ms);
      const [int, frac = ''] = text.split('.');
      return style === 0 ? String(Math.floor(ms / 1000)) : `${int}.${frac.padEnd(3, '0').slice(0, style)}`;
    });

const TEN_YEARS_MS = 10 * 365 * 86_400_000;

/** Number text of every kind the modes meet, most of it near `nowMs` so verdicts go both ways. */
const arbNumberText = (nowMs: number): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 6, arbitrary: arbSecondsNear(nowMs, TEN_YEARS_MS / 5) },
    {
      weight: 1,
      arbitrary: fc.integer({ min: nowMs - TEN_YEARS_MS, max: nowMs + TEN_YEARS_MS }).map(String),
    },
    { weight: 1, arbitrary: fc.integer({ min: -3, max: 3000 }).map(String) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '-1',
        '0',
        '1',
        '2147483647',
        '2147483648',
        '1.5',
        '-1.0',
        '1e11',
        'abc',
        '',
        ' 1',
      ),
    },
    { weight: 1, arbitrary: fc.double({ noNaN: false }).map(String) },
  );

const arbValue = (nowMs: number): fc.Arbitrary<AttributeValue> =>
  fc.oneof(
    { weight: 12, arbitrary: arbNumberText(nowMs).map((N) => ({ N })) },
    {
      weight: 1,
      arbitrary: fc
        .integer({ min: nowMs - TEN_YEARS_MS, max: nowMs + TEN_YEARS_MS })
        .map((ms) => ({ S: new Date(ms).toISOString() })),
    },
    { weight: 1, arbitrary: fc.string().map((S) => ({ S })) },
    { weight: 1, arbitrary: fc.boolean().map((BOOL) => ({ BOOL })) },
    { weight: 1, arbitrary: fc.constant<AttributeValue>({ NULL: true }) },
    { weight: 1, arbitrary: fc.array(fc.string(), { minLength: 1, maxLength: 3 }).map((SS) => ({ SS })) },
    { weight: 1, arbitrary: arbNumberText(nowMs).map((N) => ({ L: [{ N }] })) },
    { weight: 1, arbitrary: arbNumberText(nowMs).map((N) => ({ M: { v: { N } } })) },
  );

/** Items over the attribute names every generated policy uses: exp, ttl, _ts, t, hold. */
const arbItem = (nowMs: number): fc.Arbitrary<Item> =>
  fc.record(
    {
      pk: fc.string({ minLength: 1, maxLength: 4 }).map((S) => ({ S }) as AttributeValue),
      exp: arbValue(nowMs),
      ttl: fc.oneof(
        arbValue(nowMs),
        fc.constantFrom<AttributeValue>({ N: '-1' }, { N: '60' }, { N: '3600' }),
      ),
      _ts: arbValue(nowMs),
      t: arbValue(nowMs),
      hold: fc.oneof(
        { weight: 1, arbitrary: fc.constant<AttributeValue>({ BOOL: true }) },
        { weight: 3, arbitrary: arbValue(nowMs) },
      ),
    },
    { requiredKeys: ['pk'] },
  );

const arbSettings: fc.Arbitrary<TableTtlSettings> = fc
  .tuple(
    fc.oneof(
      fc.constant({ mode: 'dynamodb' as const, attributeName: 'exp' }),
      fc
        .oneof(fc.constant(null), fc.constant(-1 as const), fc.integer({ min: 0, max: 2_147_483_647 }))
        .map((defaultTtl) => ({
          mode: 'cosmos' as const,
          defaultTtl,
          ttlAttribute: 'ttl',
          lastWriteAttribute: '_ts',
        })),
      fc
        .tuple(
          fc.oneof(fc.constant('off' as const), fc.integer({ min: 0, max: 10 * 365 * 86_400 })),
          fc.constantFrom('epoch-seconds' as const, 'epoch-millis' as const, 'iso-8601' as const),
        )
        .map(([expireAfterSeconds, timeFormat]) => ({
          mode: 'mongo' as const,
          expireAfterSeconds,
          timeField: 't',
          timeFormat,
        })),
    ),
    fc.boolean(),
  )
  .map(([policy, hold]) => ({ policy, ...(hold ? { legalHoldAttribute: 'hold' } : {}) }));

/** A time, the settings and an item whose values are mostly near that time. */
const arbCase = arbNow.chain((now) => fc.tuple(arbSettings, arbItem(now), fc.constant(now)));

const params = { numRuns: 1500 };

describe('policy properties', () => {
  it('evaluate is total: any item gets a verdict, never an exception', () => {
    fc.assert(
      fc.property(arbCase, ([settings, item, now]) => {
        expect(['not-subject', 'ignored', 'never', 'held', 'expires']).toContain(
          evaluate(settings, item, now).kind,
        );
      }),
      params,
    );
  });

  it('expired implies expiresAtMs <= now, and an expires verdict is expired exactly from expiresAtMs on', () => {
    fc.assert(
      fc.property(arbCase, ([settings, item, now]) => {
        const e = evaluate(settings, item, now);
        if (e.kind !== 'expires') return;
        expect(e.expired).toBe(e.expiresAtMs <= now);
        expect(Number.isFinite(e.expiresAtMs)).toBe(true);
      }),
      params,
    );
  });

  it('is monotonic in time: once expired, stays expired (dynamodb: until the 5-year line is passed)', () => {
    fc.assert(
      fc.property(
        arbCase,
        fc.integer({ min: 0, max: 20 * 365 * 86_400_000 }),
        ([settings, item, now], later) => {
          const first = evaluate(settings, item, now);
          if (!isExpired(first) || first.kind !== 'expires') return;
          const second = evaluate(settings, item, now + later);
          if (settings.policy.mode === 'dynamodb' && now + later - first.expiresAtMs > FIVE_YEARS_MS) {
            expect(second).toEqual({ kind: 'ignored', reason: 'older-than-5-years' });
          } else {
            expect(second).toEqual(first);
          }
        },
      ),
      params,
    );
  });

  it('deletes only for valid inputs: wrong types, malformed values and absent attributes are never expired', () => {
    fc.assert(
      fc.property(arbCase, ([settings, item, now]) => {
        if (!isExpired(evaluate(settings, item, now))) return;
        const validNumber = (v: AttributeValue | undefined): boolean =>
          v !== undefined && 'N' in v && typeof v.N === 'string' && parseDecimal(v.N) !== undefined;
        const policy = settings.policy;
        if (policy.mode === 'dynamodb') {
          expect(validNumber(item.exp)).toBe(true);
          expect(decimalToNumber(parseDecimal((item.exp as { N: string }).N)!, 3)).toBeGreaterThanOrEqual(
            now - FIVE_YEARS_MS,
          );
        } else if (policy.mode === 'cosmos') {
          expect(policy.defaultTtl).not.toBeNull();
          expect(validNumber(item._ts)).toBe(true);
          if (item.ttl === undefined) expect(policy.defaultTtl).toBeGreaterThanOrEqual(0);
          else {
            const n = Number((item.ttl as { N?: string }).N);
            expect(Number.isInteger(n) && n >= 1 && n <= 2_147_483_647).toBe(true);
          }
        } else {
          expect(policy.expireAfterSeconds).not.toBe('off');
          expect(item.t).toBeDefined();
        }
        if (settings.legalHoldAttribute) expect(item.hold).not.toEqual({ BOOL: true });
      }),
      params,
    );
  });

  it('a legal hold is never expired, at any time', () => {
    fc.assert(
      fc.property(arbCase, ([settings, item, now]) => {
        const held = { ...item, hold: { BOOL: true } };
        const e = evaluate({ ...settings, legalHoldAttribute: 'hold' }, held, now);
        expect(e.kind).toBe('held');
        expect(isExpired(e)).toBe(false);
      }),
      params,
    );
  });

  it('cosmos: a null default turns TTL off; item -1 never expires; a valid item ttl overrides any default', () => {
    fc.assert(
      fc.property(
        arbCase,
        fc.oneof(fc.constant(-1 as const), fc.integer({ min: 0, max: 2_147_483_647 })),
        fc.integer({ min: 1, max: 2_147_483_647 }),
        fc.integer({ min: 0, max: 4_000_000_000 }),
        ([, item, now], defaultTtl, itemTtl, lastWrite) => {
          const cosmos = (d: null | -1 | number): TableTtlSettings => ({
            policy: { mode: 'cosmos', defaultTtl: d, ttlAttribute: 'ttl', lastWriteAttribute: '_ts' },
          });
          expect(evaluate(cosmos(null), item, now)).toEqual({ kind: 'not-subject', reason: 'ttl-off' });
          expect(evaluate(cosmos(defaultTtl), { ...item, ttl: { N: '-1' } }, now)).toEqual({ kind: 'never' });
          const valid = { ...item, ttl: { N: String(itemTtl) }, _ts: { N: String(lastWrite) } };
          expect(evaluate(cosmos(defaultTtl), valid, now)).toMatchObject({
            kind: 'expires',
            expiresAtMs: (lastWrite + itemTtl) * 1000,
          });
          const { ttl: _ttl, ...inherits } = valid;
          expect(evaluate(cosmos(defaultTtl), inherits, now)).toEqual(
            defaultTtl === -1
              ? { kind: 'never' }
              : expect.objectContaining({ expiresAtMs: (lastWrite + defaultTtl) * 1000 }),
          );
        },
      ),
      params,
    );
  });

  it('filterUnexpired keeps exactly the not-expired items, in order', () => {
    fc.assert(
      fc.property(
        arbNow.chain((now) =>
          fc.tuple(arbSettings, fc.array(arbItem(now), { maxLength: 30 }), fc.constant(now)),
        ),
        ([settings, items, now]) => {
          const kept = filterUnexpired(settings, items, now);
          expect(kept).toEqual(items.filter((item) => !isExpired(evaluate(settings, item, now))));
          expect(kept.every((item) => !isExpired(evaluate(settings, item, now)))).toBe(true);
          expect(items.length - kept.length).toBe(
            items.filter((item) => isExpired(evaluate(settings, item, now))).length,
          );
        },
      ),
      params,
    );
  });

  it('stillExpiredCondition builds a condition exactly for expired items, pinning their own values', () => {
    fc.assert(
      fc.property(arbCase, ([settings, item, now]) => {
        if (!isExpired(evaluate(settings, item, now))) {
          expect(() => stillExpiredCondition(settings, item, now)).toThrow(
            /refusing to build a delete condition/,
          );
          return;
        }
        const parts = stillExpiredCondition(settings, item, now);
        for (const [placeholder, value] of Object.entries(parts.values)) {
          if (placeholder === ':holdTrue') continue;
          const name = parts.names[placeholder.replace(':', '#')];
          expect(name).toBeDefined();
          expect(value).toEqual(item[name!]);
        }
        // Every input of the verdict is pinned: the policy's attributes and, when configured, the hold.
        const pinned = Object.values(parts.names);
        if (settings.legalHoldAttribute) {
          expect(parts.expression).toContain('(attribute_not_exists(#hold) OR #hold <> :holdTrue)');
          expect(parts.names['#hold']).toBe(settings.legalHoldAttribute);
        }
        const policy = settings.policy;
        const inputs =
          policy.mode === 'dynamodb' ? ['exp'] : policy.mode === 'cosmos' ? ['ttl', '_ts'] : ['t'];
        for (const input of inputs) expect(pinned).toContain(input);
        for (const placeholder of [...Object.keys(parts.names), ...Object.keys(parts.values)]) {
          expect(parts.expression).toContain(placeholder);
        }
      }),
      params,
    );
  });

  it('reads back its own decimal seconds and ISO-8601 text exactly', () => {
    fc.assert(
      fc.property(fc.integer({ min: -8.64e15, max: 8.64e15 }), (ms) => {
        expect(decimalToNumber(parseDecimal(millisToSecondsText(ms))!, 3)).toBe(ms);
      }),
      params,
    );
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(0, 0, 1) - 1900 * 365 * 86_400_000, max: Date.UTC(9999, 11, 31) }),
        (ms) => {
          const iso = new Date(ms).toISOString();
          fc.pre(/^\d{4}-/.test(iso));
          expect(parseIso8601(iso)).toBe(ms);
        },
      ),
      params,
    );
  });
});
