import {
  filterUnexpired,
  notExpiredFilter,
  relevantAttributes,
  type Item,
  type TableTtlSettings,
} from '../../../policy';

const NOW = Date.UTC(2025, 0, 1, 0, 0, 0, 123);

describe('relevantAttributes', () => {
  it('lists what each mode reads, plus the hold, without duplicates', () => {
    expect(relevantAttributes({ policy: { mode: 'dynamodb', attributeName: 'exp' } })).toEqual(['exp']);
    expect(
      relevantAttributes({
        policy: { mode: 'cosmos', defaultTtl: -1, ttlAttribute: 'ttl', lastWriteAttribute: '_ts' },
        legalHoldAttribute: 'hold',
      }),
    ).toEqual(['ttl', '_ts', 'hold']);
    expect(
      relevantAttributes({
        policy: { mode: 'mongo', expireAfterSeconds: 'off', timeField: 'at', timeFormat: 'iso-8601' },
        legalHoldAttribute: 'at',
      }),
    ).toEqual(['at']);
  });
});

describe('notExpiredFilter', () => {
  it('sends now and the 5-year line as exact decimal seconds', () => {
    const parts = notExpiredFilter(
      { policy: { mode: 'dynamodb', attributeName: 'exp' }, legalHoldAttribute: 'h' },
      NOW,
    );
    expect(parts).toEqual({
      expression:
        'attribute_not_exists(#ttl) OR NOT attribute_type(#ttl, :numberType) OR #ttl > :now OR #ttl < :oldestHonoured OR #hold = :holdTrue',
      names: { '#ttl': 'exp', '#hold': 'h' },
      values: {
        ':numberType': { S: 'N' },
        ':now': { N: '1735689600.123' },
        ':oldestHonoured': { N: '1577923200.123' },
        ':holdTrue': { BOOL: true },
      },
    });
  });

  it('is null for cosmos and mongo (their expiry cannot be computed in a filter)', () => {
    expect(
      notExpiredFilter(
        { policy: { mode: 'cosmos', defaultTtl: 1, ttlAttribute: 'ttl', lastWriteAttribute: '_ts' } },
        NOW,
      ),
    ).toBeNull();
    expect(
      notExpiredFilter(
        { policy: { mode: 'mongo', expireAfterSeconds: 1, timeField: 't', timeFormat: 'iso-8601' } },
        NOW,
      ),
    ).toBeNull();
  });
});

describe('filterUnexpired', () => {
  it('keeps exactly the items that are not expired, in order, in every mode', () => {
    const settings: TableTtlSettings = {
      policy: { mode: 'cosmos', defaultTtl: 60, ttlAttribute: 'ttl', lastWriteAttribute: '_ts' },
      legalHoldAttribute: 'hold',
    };
    const s = Math.floor(NOW / 1000);
    const items: Array<Item & { id: { S: string } }> = [
      { id: { S: 'expired-default' }, _ts: { N: String(s - 60) } },
      { id: { S: 'fresh-default' }, _ts: { N: String(s - 59) } },
      { id: { S: 'never' }, _ts: { N: '0' }, ttl: { N: '-1' } },
      { id: { S: 'held' }, _ts: { N: '0' }, hold: { BOOL: true } },
      { id: { S: 'expired-item-ttl' }, _ts: { N: String(s - 5) }, ttl: { N: '5' } },
      { id: { S: 'unaged' } },
      { id: { S: 'null-ttl' }, _ts: { N: '0' }, ttl: { NULL: true } },
    ];
    expect(filterUnexpired(settings, items, NOW).map((i) => i.id.S)).toEqual([
      'fresh-default',
      'never',
      'held',
      'unaged',
      'null-ttl',
    ]);
  });

  it('rejects a bad "now" even for an empty list', () => {
    const settings: TableTtlSettings = { policy: { mode: 'dynamodb', attributeName: 'exp' } };
    expect(() => filterUnexpired(settings, [], NaN)).toThrow(/nowMs must be a finite epoch time/);
    expect(() => notExpiredFilter(settings, Infinity)).toThrow(/nowMs must be a finite epoch time/);
  });
});
