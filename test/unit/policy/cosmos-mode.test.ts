import { evaluate, isExpired, type Evaluation, type Item, type TableTtlSettings } from '../../../policy';
import { cosmosTtl } from '../../support/ttl-settings';

const WRITTEN_S = 1_551_307_496; // the _ts of seed 000's example document
const WRITTEN = WRITTEN_S * 1000;

function doc(ttl?: Item[string]): Item {
  return { id: { S: '1' }, _ts: { N: String(WRITTEN_S) }, ...(ttl === undefined ? {} : { ttl }) };
}

describe('cosmos mode: the DefaultTimeToLive × TimeToLive matrix of seed 001', () => {
  // Seed 001's item "TimeToLive = null" is the property left out (NullValueHandling.Ignore): "absent" here.
  const matrix: Array<
    [string, null | -1 | number, string, Item[string] | undefined, 'off' | 'never' | number]
  > = [
    ['null', null, 'absent', undefined, 'off'],
    ['null', null, '-1', { N: '-1' }, 'off'],
    ['null', null, '2000', { N: '2000' }, 'off'],
    ['-1', -1, 'absent', undefined, 'never'],
    ['-1', -1, '-1', { N: '-1' }, 'never'],
    ['-1', -1, '2000', { N: '2000' }, 2000],
    ['1000', 1000, 'absent', undefined, 1000],
    ['1000', 1000, '-1', { N: '-1' }, 'never'],
    ['1000', 1000, '2000', { N: '2000' }, 2000],
  ];

  it.each(matrix)('default %s, item %s', (_d, defaultTtl, _i, ttl, outcome) => {
    const settings = cosmosTtl(defaultTtl);
    const item = doc(ttl);
    if (outcome === 'off') {
      // "TTL is disabled. The document will never expire": at any time, whatever the item says.
      for (const now of [WRITTEN, WRITTEN + 10_000_000, WRITTEN + 1e12]) {
        expect(evaluate(settings, item, now)).toEqual({ kind: 'not-subject', reason: 'ttl-off' });
      }
    } else if (outcome === 'never') {
      for (const now of [WRITTEN, WRITTEN + 10_000_000, WRITTEN + 1e12]) {
        expect(evaluate(settings, item, now)).toEqual({ kind: 'never' });
      }
    } else {
      const expiresAtMs = WRITTEN + outcome * 1000;
      expect(evaluate(settings, item, expiresAtMs - 1)).toEqual<Evaluation>({
        kind: 'expires',
        expiresAtMs,
        expired: false,
        looksLikeMillis: false,
      });
      expect(evaluate(settings, item, expiresAtMs)).toEqual<Evaluation>({
        kind: 'expires',
        expiresAtMs,
        expired: true,
        looksLikeMillis: false,
      });
    }
  });
});

describe("cosmos mode: seed 000's notes", () => {
  it('container default 0 expires an item at its last write ("expire immediately")', () => {
    expect(evaluate(cosmosTtl(0), doc(), WRITTEN)).toEqual({
      kind: 'expires',
      expiresAtMs: WRITTEN,
      expired: true,
      looksLikeMillis: false,
    });
    expect(isExpired(evaluate(cosmosTtl(0), doc(), WRITTEN - 1))).toBe(false);
  });

  it('the container maximum 2147483647 (68 years) applies as a default', () => {
    const e = evaluate(cosmosTtl(2_147_483_647), doc(), WRITTEN);
    expect(e).toMatchObject({ kind: 'expires', expiresAtMs: WRITTEN + 2_147_483_647_000, expired: false });
  });

  it('an item ttl overrides the container default in both directions', () => {
    expect(evaluate(cosmosTtl(90 * 86_400), doc({ N: '10' }), WRITTEN + 10_000)).toMatchObject({
      expired: true,
    });
    expect(evaluate(cosmosTtl(10), doc({ N: String(90 * 86_400) }), WRITTEN + 10_000)).toMatchObject({
      expired: false,
    });
  });

  it('refuses an item ttl of NULL ("In item level you CANNOT set it to null")', () => {
    for (const d of [-1, 0, 1000]) {
      expect(evaluate(cosmosTtl(d), doc({ NULL: true }), WRITTEN + 1e10)).toEqual({
        kind: 'ignored',
        reason: 'item-ttl-null',
      });
    }
  });

  it.each(['0', '-2', '-100', '1.5', '2147483648', '1e10', 'abc', ''])(
    'ignores the item ttl %j as malformed',
    (text) => {
      expect(evaluate(cosmosTtl(1000), doc({ N: text }), WRITTEN + 1e10)).toEqual({
        kind: 'ignored',
        reason: 'malformed',
      });
    },
  );

  it('accepts the item ttl bounds 1 and 2147483647, and -1 spelled -1.0', () => {
    expect(evaluate(cosmosTtl(-1), doc({ N: '1' }), WRITTEN + 1000)).toMatchObject({
      expiresAtMs: WRITTEN + 1000,
      expired: true,
    });
    expect(evaluate(cosmosTtl(-1), doc({ N: '2147483647' }), WRITTEN)).toMatchObject({
      expiresAtMs: WRITTEN + 2_147_483_647_000,
    });
    expect(evaluate(cosmosTtl(1000), doc({ N: '-1.0' }), WRITTEN + 1e10)).toEqual({ kind: 'never' });
  });

  it.each<[string, Item[string]]>([
    ['S', { S: '10' }],
    ['BOOL', { BOOL: true }],
    ['L', { L: [{ N: '10' }] }],
    ['M', { M: { ttl: { N: '10' } } }],
    ['NS', { NS: ['10'] }],
  ])('ignores an item ttl of type %s', (_t, value) => {
    expect(evaluate(cosmosTtl(1000), doc(value), WRITTEN + 1e10)).toEqual({
      kind: 'ignored',
      reason: 'wrong-type',
    });
  });

  it('TTL resets after every modification: a newer _ts moves the expiry', () => {
    const later = { ...doc({ N: '10' }), _ts: { N: String(WRITTEN_S + 3600) } };
    expect(isExpired(evaluate(cosmosTtl(-1), doc({ N: '10' }), WRITTEN + 20_000))).toBe(true);
    expect(isExpired(evaluate(cosmosTtl(-1), later, WRITTEN + 20_000))).toBe(false);
  });

  it('without a usable last-write time the item cannot be aged and is not subject', () => {
    const noTs: Item = { id: { S: '1' }, ttl: { N: '10' } };
    expect(evaluate(cosmosTtl(1000), noTs, 1e15)).toEqual({ kind: 'not-subject', reason: 'no-attribute' });
    for (const bad of [{ S: String(WRITTEN_S) }, { N: 'x' }, { N: '-5' }, { NULL: true }] as Item[string][]) {
      expect(evaluate(cosmosTtl(1000), { ...doc(), _ts: bad }, 1e15)).toEqual({
        kind: 'not-subject',
        reason: 'no-attribute',
      });
    }
  });

  it('needs no last-write time to know an item never expires or has an invalid ttl', () => {
    expect(evaluate(cosmosTtl(1000), { id: { S: '1' }, ttl: { N: '-1' } }, 1e15)).toEqual({ kind: 'never' });
    expect(evaluate(cosmosTtl(-1), { id: { S: '1' } }, 1e15)).toEqual({ kind: 'never' });
    expect(evaluate(cosmosTtl(1000), { id: { S: '1' }, ttl: { NULL: true } }, 1e15)).toEqual({
      kind: 'ignored',
      reason: 'item-ttl-null',
    });
  });

  it('uses the configured attribute names', () => {
    const settings: TableTtlSettings = {
      policy: { mode: 'cosmos', defaultTtl: -1, ttlAttribute: 'lifetime', lastWriteAttribute: 'modifiedAt' },
    };
    const item: Item = {
      id: { S: '1' },
      lifetime: { N: '60' },
      modifiedAt: { N: String(WRITTEN_S) },
      ttl: { N: '1' },
    };
    expect(evaluate(settings, item, WRITTEN + 60_000)).toMatchObject({
      kind: 'expires',
      expiresAtMs: WRITTEN + 60_000,
    });
  });

  it('flags a last-write time in milliseconds', () => {
    const item = { ...doc({ N: '10' }), _ts: { N: String(WRITTEN) } };
    expect(evaluate(cosmosTtl(-1), item, WRITTEN + 20_000)).toMatchObject({
      expired: false,
      looksLikeMillis: true,
    });
  });

  it('a fractional (millisecond-resolution) stamp counts exactly', () => {
    const item = { ...doc({ N: '10' }), _ts: { N: `${WRITTEN_S}.250` } };
    expect(evaluate(cosmosTtl(-1), item, WRITTEN + 10_249)).toMatchObject({
      expiresAtMs: WRITTEN + 10_250,
      expired: false,
    });
    expect(evaluate(cosmosTtl(-1), item, WRITTEN + 10_250)).toMatchObject({ expired: true });
  });
});
