import * as ttlstream from '../../index';

describe('the package entry point (index.ts)', () => {
  it('exposes the record contract, the consumer helper and the policy engine as working functions', () => {
    const settings = { policy: { mode: 'dynamodb' as const, attributeName: 'exp' } };
    const now = Date.UTC(2024, 0, 1);
    const expired = ttlstream.evaluate(settings, { pk: { S: 'a' }, exp: { N: String(now / 1000 - 1) } }, now);
    expect(ttlstream.isExpired(expired)).toBe(true);
    expect(
      ttlstream.filterUnexpired(settings, [{ pk: { S: 'a' }, exp: { N: String(now / 1000 - 1) } }], now),
    ).toEqual([]);
    expect(ttlstream.canonicalJson({ b: 1, a: 2 })).toBe('{"a":2,"b":1}');
    expect(
      ttlstream.isTtlDelete({
        eventName: 'REMOVE',
        userIdentity: { type: 'Service', principalId: 'dynamodb.amazonaws.com' },
      }),
    ).toBe(true);
    expect(typeof ttlstream.consumeTtlStream).toBe('function');
    expect(typeof ttlstream.encodeRemove).toBe('function');
    expect(typeof ttlstream.decodeMessage).toBe('function');
    expect(() => ttlstream.parseConfig({ api: { port: 0 } })).toThrow(ttlstream.ConfigError);
  });
});
