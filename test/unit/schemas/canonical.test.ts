import fc from 'fast-check';
import { DataError, ValidationError } from '../../../core/errors';
import { createHash } from 'node:crypto';
import {
  canonicalJson,
  canonicalNumber,
  deriveEventId,
  keyDigest,
  formatSequenceNumber,
  messageKey,
  type AttributeMap,
} from '../../../schemas';
import { keyValueArb } from '../../support/stream-samples';

describe('messageKey', () => {
  it('does not depend on attribute order', () => {
    fc.assert(
      fc.property(keyValueArb, keyValueArb, (a, b) => {
        expect(messageKey('orders', { pk: a, sk: b })).toBe(messageKey('orders', { sk: b, pk: a }));
      }),
    );
  });

  it('does not depend on the spelling of a number', () => {
    const key = messageKey('orders', { pk: { N: '15' } });
    for (const spelling of ['15', '15.0', '+15', '1.5e1', '150E-1', '015', '15.000']) {
      expect(messageKey('orders', { pk: { N: spelling } })).toBe(key);
    }
  });

  it('differs for different items, tables and types', () => {
    fc.assert(
      fc.property(keyValueArb, keyValueArb, (a, b) => {
        fc.pre(canonicalJson(a) !== canonicalJson(b));
        fc.pre(!(a.N !== undefined && b.N !== undefined && canonicalNumber(a.N) === canonicalNumber(b.N)));
        expect(messageKey('orders', { pk: a })).not.toBe(messageKey('orders', { pk: b }));
      }),
    );
    expect(messageKey('orders', { pk: { S: '1' } })).not.toBe(messageKey('orders', { pk: { N: '1' } }));
    expect(messageKey('orders', { pk: { S: 'a' } })).not.toBe(messageKey('orders2', { pk: { S: 'a' } }));
  });

  it('has a readable, documented form', () => {
    const keys: AttributeMap = { sk: { B: new Uint8Array([1, 2]) }, pk: { S: 'a"b' } };
    expect(messageKey('orders', keys)).toBe('orders/{"pk":{"S":"a\\"b"},"sk":{"B":"AQI="}}');
  });

  it('rejects an invalid table name or an empty key', () => {
    expect(() => messageKey('a/b', { pk: { S: 'a' } })).toThrow(DataError);
    expect(() => messageKey('orders', {})).toThrow(DataError);
  });
});

describe('canonicalNumber', () => {
  it.each([
    ['0', '0'],
    ['-0', '0'],
    ['0.000', '0'],
    ['00100', '100'],
    ['100', '100'],
    ['-7', '-7'],
    ['+7', '7'],
    ['-070', '-70'],
    [`9${'0'.repeat(40)}`, `9${'0'.repeat(40)}`],
    ['1e2', '100'],
    ['-1.250', '-1.25'],
    ['.5', '0.5'],
    ['5.', '5'],
    ['1.5E-3', '0.0015'],
    ['12345678901234567890123456789012345678', '12345678901234567890123456789012345678'],
    ['1e126', `1${'0'.repeat(126)}`],
    ['1e-130', `0.${'0'.repeat(129)}1`],
    ['1e5000', '1e5000'],
    ['10e5000', '1e5001'],
  ])('%s → %s', (input, expected) => {
    expect(canonicalNumber(input)).toBe(expected);
  });

  it('is the identity on numbers as DynamoDB returns them, and agrees with JS numbers when exact', () => {
    fc.assert(
      fc.property(fc.integer(), (n) => {
        expect(canonicalNumber(String(n))).toBe(String(n));
        expect(canonicalNumber(`${n}.000`)).toBe(String(n));
      }),
    );
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (d) => {
        expect(Number(canonicalNumber(String(d)))).toBe(d === 0 ? 0 : d);
      }),
    );
  });

  it('rejects what is not a number', () => {
    expect(() => canonicalNumber('abc')).toThrow(DataError);
    expect(() => canonicalNumber('')).toThrow(DataError);
    expect(() => canonicalNumber('1e')).toThrow(DataError);
  });
});

describe('canonicalJson', () => {
  it('sorts keys at every depth, keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
    );
  });

  it('is insensitive to property order', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (obj) => {
        const reversed = Object.fromEntries(Object.entries(obj).reverse());
        expect(canonicalJson(reversed)).toBe(canonicalJson(obj));
        expect(JSON.parse(canonicalJson(obj))).toEqual(JSON.parse(JSON.stringify(obj)));
      }),
    );
  });

  it('writes binaries as base64 and omits undefined properties', () => {
    expect(canonicalJson({ b: new Uint8Array([255]), u: undefined, l: [undefined] })).toBe(
      '{"b":"/w==","l":[null]}',
    );
  });

  it('throws on what JSON cannot carry faithfully', () => {
    for (const v of [NaN, Infinity, 1n, () => 1, Symbol('s')])
      expect(() => canonicalJson({ v })).toThrow(DataError);
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(() => canonicalJson(circular)).toThrow(/circular/);
  });
});

describe('deriveEventId and formatSequenceNumber', () => {
  it('derives the same 32-hex id for the same parts in any order, another for other parts', () => {
    const id = deriveEventId({ table: 'orders', keys: { pk: { S: 'a' } }, expiry: '1700000000' });
    expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(deriveEventId({ expiry: '1700000000', keys: { pk: { S: 'a' } }, table: 'orders' })).toBe(id);
    expect(deriveEventId({ table: 'orders', keys: { pk: { S: 'a' } }, expiry: '1700000001' })).not.toBe(id);
  });

  it('pads sequence numbers to 21 digits and keeps their order as strings of equal length', () => {
    expect(formatSequenceNumber(1)).toBe('000000000000000000001');
    expect(formatSequenceNumber(10n ** 22n)).toBe('10000000000000000000000');
    expect(() => formatSequenceNumber(-1)).toThrow(ValidationError);
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 10n ** 21n - 1n }),
        fc.bigInt({ min: 0n, max: 10n ** 21n - 1n }),
        (a, b) => {
          expect(formatSequenceNumber(a) < formatSequenceNumber(b)).toBe(a < b);
        },
      ),
    );
  });
});

describe('keyDigest', () => {
  it('is the SHA-256 of the message key: stable across attribute order and number spelling, distinct per table', () => {
    const a = keyDigest('orders', { pk: { S: 'a' }, sk: { N: '1.0' } });
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(keyDigest('orders', { sk: { N: '1' }, pk: { S: 'a' } })).toBe(a);
    expect(keyDigest('orders2', { pk: { S: 'a' }, sk: { N: '1' } })).not.toBe(a);
    expect(keyDigest('orders', { pk: { S: 'b' }, sk: { N: '1' } })).not.toBe(a);
    expect(a).toBe(createHash('sha256').update('orders/{"pk":{"S":"a"},"sk":{"N":"1"}}').digest('hex'));
  });
});
