import fc from 'fast-check';
import { evaluate, isExpired } from '../../../../policy';
import { ValidationError } from '../../../../core/errors';
import type { TtlPolicy } from '../../../../policy/settings';
import type { Item } from '../../../../policy/types';
import { applyRestoreTtl, effectivePolicy } from '../../../../archive-tools/restore/ttl';
import { mongoTtl } from '../../../support/ttl-settings';

const NOW = Date.UTC(2025, 0, 15, 12, 0, 0, 500);
const NOW_S = Math.floor(NOW / 1000);
const PAST_S = NOW_S - 3600;

const dynamo: TtlPolicy = { mode: 'dynamodb', attributeName: 'expiresAt' };
const cosmos: TtlPolicy = { mode: 'cosmos', defaultTtl: 60, ttlAttribute: 'ttl', lastWriteAttribute: '_ts' };

const base: Item = { pk: { S: 'k1' }, payload: { M: { a: { L: [{ N: '1' }, { S: 'x' }] } } } };

describe('restore TTL handling, dynamodb mode', () => {
  const item: Item = { ...base, expiresAt: { N: String(PAST_S) } };

  it('remove drops the TTL attribute and nothing else', () => {
    const { item: out, warning } = applyRestoreTtl(item, dynamo, 'remove', NOW);
    expect(out).toEqual(base);
    expect(warning).toBeUndefined();
    expect(item.expiresAt).toEqual({ N: String(PAST_S) }); // input untouched
  });

  it('keep leaves the item as deleted and warns that it will expire again', () => {
    const { item: out, warning } = applyRestoreTtl(item, dynamo, 'keep', NOW);
    expect(out).toEqual(item);
    expect(warning).toMatch(/deleted again/);
  });

  it('keep does not warn when the TTL is still in the future', () => {
    const future = { ...base, expiresAt: { N: String(NOW_S + 10) } };
    expect(applyRestoreTtl(future, dynamo, 'keep', NOW).warning).toBeUndefined();
  });

  it('extend sets TTL = now + n in epoch seconds', () => {
    const { item: out } = applyRestoreTtl(item, dynamo, { extendSeconds: 86400 }, NOW);
    expect(out).toEqual({ ...base, expiresAt: { N: String(NOW_S + 86400) } });
  });
});

describe('restore TTL handling, cosmos mode', () => {
  const item: Item = { ...base, ttl: { N: '30' }, _ts: { N: String(PAST_S) } };

  it('remove sets the item ttl to -1 (never), since dropping it would fall back to the default TTL', () => {
    const { item: out } = applyRestoreTtl(item, cosmos, 'remove', NOW);
    expect(out).toEqual({ ...base, ttl: { N: '-1' }, _ts: { N: String(PAST_S) } });
  });

  it('remove also pins items that had no ttl of their own', () => {
    const { item: out } = applyRestoreTtl({ ...base, _ts: { N: String(PAST_S) } }, cosmos, 'remove', NOW);
    expect(out.ttl).toEqual({ N: '-1' });
  });

  it('extend sets ttl = n and the last write to now', () => {
    const { item: out } = applyRestoreTtl(item, cosmos, { extendSeconds: 120 }, NOW);
    expect(out).toEqual({ ...base, ttl: { N: '120' }, _ts: { N: String(NOW_S) } });
  });

  it('keep warns when _ts + ttl (or the default) is past', () => {
    expect(applyRestoreTtl(item, cosmos, 'keep', NOW).warning).toMatch(/deleted again/);
    const noTtl = { ...base, _ts: { N: String(NOW_S - 30) } }; // default 60 s: 30 s left
    expect(applyRestoreTtl(noTtl, cosmos, 'keep', NOW).warning).toBeUndefined();
    const never = { ...base, ttl: { N: '-1' }, _ts: { N: String(PAST_S) } };
    expect(applyRestoreTtl(never, cosmos, 'keep', NOW).warning).toBeUndefined();
  });
});

describe('restore TTL handling, mongo mode', () => {
  it('remove drops the time field', () => {
    const item = { ...base, createdAt: { N: String(PAST_S) } };
    expect(applyRestoreTtl(item, mongoTtl(600, 'epoch-seconds').policy, 'remove', NOW).item).toEqual(base);
  });

  it.each([
    ['epoch-seconds', { N: String(NOW_S + 100 - 600) }],
    ['epoch-millis', { N: String((NOW_S + 100 - 600) * 1000) }],
    ['iso-8601', { S: new Date((NOW_S + 100 - 600) * 1000).toISOString() }],
  ] as const)('extend sets the time field to now + n - expireAfterSeconds as %s', (format, expected) => {
    const item = { ...base, createdAt: { N: String(PAST_S) } };
    const { item: out } = applyRestoreTtl(item, mongoTtl(600, format).policy, { extendSeconds: 100 }, NOW);
    expect(out).toEqual({ ...base, createdAt: expected });
  });

  it('extend with expireAfterSeconds "off" sets the field to now + n', () => {
    const { item: out } = applyRestoreTtl(
      base,
      mongoTtl('off', 'epoch-seconds').policy,
      { extendSeconds: 5 },
      NOW,
    );
    expect(out.createdAt).toEqual({ N: String(NOW_S + 5) });
  });

  it('keep warns for a past ISO time field and not for a recent one', () => {
    const old = { ...base, createdAt: { S: new Date(NOW - 3_600_000).toISOString() } };
    expect(applyRestoreTtl(old, mongoTtl(600, 'iso-8601').policy, 'keep', NOW).warning).toMatch(
      /deleted again/,
    );
    const recent = { ...base, createdAt: { S: new Date(NOW - 1000).toISOString() } };
    expect(applyRestoreTtl(recent, mongoTtl(600, 'iso-8601').policy, 'keep', NOW).warning).toBeUndefined();
  });
});

describe('effectivePolicy', () => {
  it('prefers the table settings, then dynamodb semantics on the given attribute', () => {
    expect(effectivePolicy({ policy: cosmos }, 'x', 'remove')).toBe(cosmos);
    expect(effectivePolicy(undefined, 'exp', 'remove')).toEqual({ mode: 'dynamodb', attributeName: 'exp' });
  });

  it('needs an attribute name unless the mode is keep', () => {
    expect(effectivePolicy(undefined, undefined, 'keep')).toBeNull();
    expect(() => effectivePolicy(undefined, undefined, 'remove')).toThrow(ValidationError);
    expect(() => effectivePolicy(undefined, undefined, { extendSeconds: 1 })).toThrow(/ttlAttribute/);
  });

  it('with no policy every mode leaves the item as it is', () => {
    expect(applyRestoreTtl(base, null, 'keep', NOW)).toEqual({ item: base });
  });
});

describe('restore TTL handling agrees with the policy engine', () => {
  const policyArb: fc.Arbitrary<TtlPolicy> = fc.oneof(
    fc.constant<TtlPolicy>(dynamo),
    fc
      .oneof(fc.constant(null), fc.constant(-1 as const), fc.integer({ min: 0, max: 10 ** 6 }))
      .map((defaultTtl): TtlPolicy => ({ ...cosmos, defaultTtl }) as TtlPolicy),
    fc
      .tuple(
        fc.constantFrom('epoch-seconds', 'epoch-millis', 'iso-8601'),
        fc.oneof(fc.constant('off' as const), fc.integer({ min: 0, max: 10 ** 6 })),
      )
      .map(([format, after]) => mongoTtl(after, format as 'epoch-seconds').policy),
  );
  // Deleted items: every TTL input set to something long past.
  const deleted: Item = {
    ...base,
    expiresAt: { N: String(PAST_S) },
    ttl: { N: '5' },
    _ts: { N: String(PAST_S) },
    createdAt: { N: String(PAST_S) },
  };

  it('remove and extend give items the engine does not delete now', () => {
    fc.assert(
      fc.property(policyArb, fc.integer({ min: 1, max: 10 ** 8 }), (policy, n) => {
        for (const mode of ['remove', { extendSeconds: n }] as const) {
          const item = { ...deleted };
          if (policy.mode === 'mongo' && policy.timeFormat === 'iso-8601')
            item.createdAt = { S: new Date(PAST_S * 1000).toISOString() };
          const verdict = evaluate({ policy }, applyRestoreTtl(item, policy, mode, NOW).item, NOW);
          expect(isExpired(verdict)).toBe(false);
        }
      }),
    );
  });

  it('extend makes the item expire n seconds from now (to the second) wherever TTL is on', () => {
    fc.assert(
      fc.property(policyArb, fc.integer({ min: 1, max: 10 ** 8 }), (policy, n) => {
        const verdict = evaluate(
          { policy },
          applyRestoreTtl(deleted, policy, { extendSeconds: n }, NOW).item,
          NOW,
        );
        const off =
          (policy.mode === 'cosmos' && policy.defaultTtl === null) ||
          (policy.mode === 'mongo' && policy.expireAfterSeconds === 'off');
        if (off) expect(verdict.kind).toBe('not-subject');
        else
          expect(verdict).toMatchObject({ kind: 'expires', expiresAtMs: (NOW_S + n) * 1000, expired: false });
      }),
    );
  });

  it('keep warns exactly when the engine says the item is expired', () => {
    fc.assert(
      fc.property(policyArb, fc.integer({ min: -(10 ** 6), max: 10 ** 6 }), (policy, offset) => {
        const t = NOW_S + offset;
        const item: Item = {
          ...base,
          expiresAt: { N: String(t) },
          _ts: { N: String(t) },
          createdAt: { N: String(t) },
        };
        const { warning } = applyRestoreTtl(item, policy, 'keep', NOW);
        expect(warning !== undefined).toBe(isExpired(evaluate({ policy }, item, NOW)));
      }),
    );
  });
});
