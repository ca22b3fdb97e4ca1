import { evaluate, isExpired, type Item, type TableTtlSettings } from '../../../policy';
import { mongoTtl } from '../../support/ttl-settings';

const TIMESTAMP = Date.parse('2021-05-18T10:00:00.000Z'); // seed 003's example document

const reading = (timestamp: Item[string]): Item => ({ id: { S: 'r1' }, timestamp, temp: { N: '12' } });

describe('mongo mode', () => {
  it("expires seed 003's document at 2021-05-19T10:00:00Z with expireAfterSeconds 86400, in every time format", () => {
    const expiresAtMs = Date.parse('2021-05-19T10:00:00.000Z');
    const forms: Array<[TableTtlSettings, Item]> = [
      [mongoTtl(86_400, 'iso-8601', 'timestamp'), reading({ S: '2021-05-18T10:00:00.000Z' })],
      [mongoTtl(86_400, 'epoch-seconds', 'timestamp'), reading({ N: String(TIMESTAMP / 1000) })],
      [mongoTtl(86_400, 'epoch-millis', 'timestamp'), reading({ N: String(TIMESTAMP) })],
    ];
    for (const [settings, item] of forms) {
      expect(evaluate(settings, item, expiresAtMs - 1)).toEqual({
        kind: 'expires',
        expiresAtMs,
        expired: false,
        looksLikeMillis: false,
      });
      expect(isExpired(evaluate(settings, item, expiresAtMs))).toBe(true);
    }
  });

  it('is off with expireAfterSeconds "off", whatever the document holds', () => {
    expect(
      evaluate(mongoTtl('off', 'iso-8601', 'timestamp'), reading({ S: '2000-01-01T00:00:00Z' }), Date.now()),
    ).toEqual({
      kind: 'not-subject',
      reason: 'ttl-off',
    });
  });

  it('applies a changed expireAfterSeconds to existing documents (collMod)', () => {
    const item = reading({ S: '2021-05-18T10:00:00Z' });
    const now = Date.parse('2021-05-20T10:00:00Z');
    expect(isExpired(evaluate(mongoTtl(86_400, 'iso-8601', 'timestamp'), item, now))).toBe(true);
    expect(isExpired(evaluate(mongoTtl(604_801, 'iso-8601', 'timestamp'), item, now))).toBe(false);
    expect(evaluate(mongoTtl(604_801, 'iso-8601', 'timestamp'), item, now)).toMatchObject({
      expiresAtMs: TIMESTAMP + 604_801_000,
    });
    expect(isExpired(evaluate(mongoTtl(0, 'iso-8601', 'timestamp'), item, TIMESTAMP))).toBe(true);
  });

  it('ignores documents whose time field is absent or not a date, as MongoDB does', () => {
    const cases: Array<[TableTtlSettings, Item]> = [
      [mongoTtl(60, 'iso-8601', 'timestamp'), { id: { S: 'r' } }],
      [mongoTtl(60, 'iso-8601', 'timestamp'), reading({ N: String(TIMESTAMP) })],
      [mongoTtl(60, 'iso-8601', 'timestamp'), reading({ S: 'yesterday' })],
      [mongoTtl(60, 'iso-8601', 'timestamp'), reading({ S: '2021-02-30T00:00:00Z' })],
      [mongoTtl(60, 'iso-8601', 'timestamp'), reading({ S: '2021-05-18T24:00:00Z' })],
      [mongoTtl(60, 'iso-8601', 'timestamp'), reading({ S: 'Tue May 18 2021 10:00:00 GMT+0000' })],
      [mongoTtl(60, 'epoch-seconds', 'timestamp'), reading({ S: String(TIMESTAMP / 1000) })],
      [mongoTtl(60, 'epoch-seconds', 'timestamp'), reading({ N: 'abc' })],
      [mongoTtl(60, 'epoch-millis', 'timestamp'), reading({ BOOL: true })],
      [mongoTtl(60, 'epoch-millis', 'timestamp'), reading({ L: [{ N: String(TIMESTAMP) }] })],
      [mongoTtl(60, 'epoch-seconds', 'timestamp'), reading({ NULL: true })],
    ];
    for (const [settings, item] of cases) {
      expect(evaluate(settings, item, TIMESTAMP + 1e12)).toEqual({
        kind: 'not-subject',
        reason: 'no-attribute',
      });
    }
  });

  it('has no 5-year rule: an old date is simply expired', () => {
    expect(
      evaluate(mongoTtl(60, 'iso-8601', 'timestamp'), reading({ S: '1999-12-31T23:59:59Z' }), TIMESTAMP),
    ).toMatchObject({
      kind: 'expires',
      expired: true,
    });
    expect(
      evaluate(mongoTtl(60, 'epoch-seconds', 'timestamp'), reading({ N: '0' }), TIMESTAMP),
    ).toMatchObject({
      expiresAtMs: 60_000,
    });
  });

  it('flags an epoch-seconds time field holding milliseconds', () => {
    expect(
      evaluate(
        mongoTtl(60, 'epoch-seconds', 'timestamp'),
        reading({ N: String(TIMESTAMP) }),
        TIMESTAMP + 120_000,
      ),
    ).toMatchObject({
      expired: false,
      looksLikeMillis: true,
    });
  });

  it('reads ISO-8601 offsets and fractions exactly; no offset means UTC', () => {
    const settings = mongoTtl(0, 'iso-8601', 'timestamp');
    const at = (text: string): unknown =>
      (evaluate(settings, reading({ S: text }), 0) as { expiresAtMs?: number }).expiresAtMs;
    expect(at('2021-05-18T12:00:00+02:00')).toBe(TIMESTAMP);
    expect(at('2021-05-18T05:30:00-0430')).toBe(TIMESTAMP);
    expect(at('2021-05-18T10:00:00')).toBe(TIMESTAMP);
    expect(at('2021-05-18T10:00Z')).toBe(TIMESTAMP);
    expect(at('2021-05-18T10:00:00.25Z')).toBe(TIMESTAMP + 250);
    expect(at('2021-05-18T10:00:00,123456Z')).toBe(TIMESTAMP + 123.456);
    expect(at('2021-05-18')).toBe(Date.parse('2021-05-18T00:00:00Z'));
    expect(at('0050-01-01T00:00:00Z')).toBe(Date.parse('0050-01-01T00:00:00Z'));
    expect(at('2024-02-29T00:00:00Z')).toBe(Date.parse('2024-02-29T00:00:00Z'));
    expect(at('2023-02-29T00:00:00Z')).toBeUndefined();
    expect(at('2021-05-18T10:00:00+24:00')).toBeUndefined();
    expect(at(' 2021-05-18')).toBeUndefined();
  });
});
