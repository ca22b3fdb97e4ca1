import { ValidationError } from '../../../core/errors';
import { stillExpiredCondition, type Item, type TableTtlSettings } from '../../../policy';

const NOW = Date.UTC(2025, 0, 1);
const NOW_S = NOW / 1000;

describe('stillExpiredCondition', () => {
  it('dynamodb: pins the exact N text and requires the attribute', () => {
    const settings: TableTtlSettings = { policy: { mode: 'dynamodb', attributeName: 'exp' } };
    const item: Item = { pk: { S: 'a' }, exp: { N: `${NOW_S - 1}.50` }, big: { M: { x: { S: 'y' } } } };
    expect(stillExpiredCondition(settings, item, NOW)).toEqual({
      expression: 'attribute_exists(#ttl) AND #ttl = :ttl',
      names: { '#ttl': 'exp' },
      values: { ':ttl': { N: `${NOW_S - 1}.50` } },
    });
  });

  it('adds the legal hold guard when a hold attribute is configured', () => {
    const settings: TableTtlSettings = {
      policy: { mode: 'dynamodb', attributeName: 'exp' },
      legalHoldAttribute: 'hold',
    };
    const parts = stillExpiredCondition(settings, { exp: { N: String(NOW_S) }, hold: { BOOL: false } }, NOW);
    expect(parts.expression).toBe(
      'attribute_exists(#ttl) AND #ttl = :ttl AND (attribute_not_exists(#hold) OR #hold <> :holdTrue)',
    );
    expect(parts.names).toEqual({ '#ttl': 'exp', '#hold': 'hold' });
    expect(parts.values).toEqual({ ':ttl': { N: String(NOW_S) }, ':holdTrue': { BOOL: true } });
  });

  it('cosmos: pins the last write and the item ttl as seen, present or absent', () => {
    const settings: TableTtlSettings = {
      policy: { mode: 'cosmos', defaultTtl: 60, ttlAttribute: 'ttl', lastWriteAttribute: '_ts' },
    };
    expect(stillExpiredCondition(settings, { _ts: { N: String(NOW_S - 60) } }, NOW)).toEqual({
      expression: 'attribute_exists(#lw) AND #lw = :lw AND attribute_not_exists(#ttl)',
      names: { '#lw': '_ts', '#ttl': 'ttl' },
      values: { ':lw': { N: String(NOW_S - 60) } },
    });
    expect(
      stillExpiredCondition(settings, { _ts: { N: String(NOW_S - 10) }, ttl: { N: '10' } }, NOW),
    ).toEqual({
      expression: 'attribute_exists(#lw) AND #lw = :lw AND attribute_exists(#ttl) AND #ttl = :ttl',
      names: { '#lw': '_ts', '#ttl': 'ttl' },
      values: { ':lw': { N: String(NOW_S - 10) }, ':ttl': { N: '10' } },
    });
  });

  it('mongo: pins the time field, N or S', () => {
    const iso: TableTtlSettings = {
      policy: { mode: 'mongo', expireAfterSeconds: 0, timeField: 'at', timeFormat: 'iso-8601' },
    };
    expect(stillExpiredCondition(iso, { at: { S: '2024-12-31T23:00:00Z' } }, NOW)).toEqual({
      expression: 'attribute_exists(#tf) AND #tf = :tf',
      names: { '#tf': 'at' },
      values: { ':tf': { S: '2024-12-31T23:00:00Z' } },
    });
    const millis: TableTtlSettings = {
      policy: { mode: 'mongo', expireAfterSeconds: 5, timeField: 'at', timeFormat: 'epoch-millis' },
    };
    expect(stillExpiredCondition(millis, { at: { N: String(NOW - 5000) } }, NOW).values).toEqual({
      ':tf': { N: String(NOW - 5000) },
    });
  });

  it('throws a ValidationError for any item that is not expired', () => {
    const settings: TableTtlSettings = {
      policy: { mode: 'dynamodb', attributeName: 'exp' },
      legalHoldAttribute: 'hold',
    };
    const notExpired: Item[] = [
      { exp: { N: String(NOW_S + 1) } },
      {},
      { exp: { S: String(NOW_S - 1) } },
      { exp: { N: '1' } },
      { exp: { N: String(NOW_S - 1) }, hold: { BOOL: true } },
      { exp: { N: String(NOW) } },
    ];
    for (const item of notExpired) {
      expect(() => stillExpiredCondition(settings, item, NOW)).toThrow(ValidationError);
    }
    expect(() => stillExpiredCondition(settings, { exp: { N: String(NOW_S + 1) } }, NOW)).toThrow(
      /not expired at 2025-01-01T00:00:00.000Z under the dynamodb policy \(verdict: expires at 2025-01-01T00:00:01.000Z\)/,
    );
    expect(() => stillExpiredCondition(settings, { exp: { N: '1' } }, NOW)).toThrow(
      /ignored\/older-than-5-years/,
    );
  });

  it('copies the values: the item may be changed afterwards without changing the condition', () => {
    const settings: TableTtlSettings = { policy: { mode: 'dynamodb', attributeName: 'exp' } };
    const item: Item = { exp: { N: String(NOW_S) } };
    const parts = stillExpiredCondition(settings, item, NOW);
    (item.exp as { N: string }).N = '0';
    expect(parts.values[':ttl']).toEqual({ N: String(NOW_S) });
  });
});
