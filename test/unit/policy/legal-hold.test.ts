import { evaluate, isExpired, type Item, type TableTtlSettings } from '../../../policy';

const NOW = Date.UTC(2025, 0, 1);
const expired: Item = { pk: { S: 'a' }, exp: { N: String(NOW / 1000 - 60) } };

const dynamo = (legalHoldAttribute?: string): TableTtlSettings => ({
  policy: { mode: 'dynamodb', attributeName: 'exp' },
  ...(legalHoldAttribute ? { legalHoldAttribute } : {}),
});

describe('legal hold', () => {
  it('BOOL true holds an expired item and reports when it would have expired', () => {
    const e = evaluate(dynamo('hold'), { ...expired, hold: { BOOL: true } }, NOW);
    expect(e).toEqual({ kind: 'held', expiresAtMs: NOW - 60_000 });
    expect(isExpired(e)).toBe(false);
  });

  it('holds items that would not expire too, without an expiry', () => {
    expect(evaluate(dynamo('hold'), { pk: { S: 'a' }, hold: { BOOL: true } }, NOW)).toEqual({ kind: 'held' });
    expect(evaluate(dynamo('hold'), { pk: { S: 'a' }, exp: { S: 'x' }, hold: { BOOL: true } }, NOW)).toEqual({
      kind: 'held',
    });
  });

  it.each<[string, Item[string]]>([
    ['BOOL false', { BOOL: false }],
    ['S "true"', { S: 'true' }],
    ['N 1', { N: '1' }],
    ['NULL', { NULL: true }],
    ['L [true]', { L: [{ BOOL: true }] }],
    ['M', { M: { hold: { BOOL: true } } }],
  ])('%s is no hold', (_name, hold) => {
    expect(isExpired(evaluate(dynamo('hold'), { ...expired, hold }, NOW))).toBe(true);
  });

  it('an absent hold is no hold, and without a configured hold attribute nothing holds', () => {
    expect(isExpired(evaluate(dynamo('hold'), expired, NOW))).toBe(true);
    expect(isExpired(evaluate(dynamo(), { ...expired, hold: { BOOL: true } }, NOW))).toBe(true);
  });

  it('applies in cosmos and mongo modes', () => {
    const cosmos: TableTtlSettings = {
      policy: { mode: 'cosmos', defaultTtl: 0, ttlAttribute: 'ttl', lastWriteAttribute: '_ts' },
      legalHoldAttribute: 'hold',
    };
    const mongo: TableTtlSettings = {
      policy: { mode: 'mongo', expireAfterSeconds: 0, timeField: 't', timeFormat: 'epoch-millis' },
      legalHoldAttribute: 'hold',
    };
    expect(evaluate(cosmos, { _ts: { N: '1000' }, hold: { BOOL: true } }, NOW)).toEqual({
      kind: 'held',
      expiresAtMs: 1_000_000,
    });
    expect(evaluate(mongo, { t: { N: '5' }, hold: { BOOL: true } }, NOW)).toEqual({
      kind: 'held',
      expiresAtMs: 5,
    });
  });
});
