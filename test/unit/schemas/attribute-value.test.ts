import { AttributeMapSchema, AttributeValueSchema, KeySchema, attributeValuesEqual } from '../../../schemas';

describe('AttributeValueSchema', () => {
  it.each([
    [{ S: '' }],
    [{ N: '-12.5e3' }],
    [{ B: new Uint8Array([1, 2]) }],
    [{ SS: ['a'] }],
    [{ NS: ['1', '2'] }],
    [{ BS: [new Uint8Array([])] }],
    [{ M: {} }],
    [{ L: [] }],
    [{ NULL: true }],
    [{ BOOL: false }],
    [{ M: { a: { L: [{ M: { b: { N: '1' } } }] } } }],
  ])('accepts %j', (value) => {
    expect(AttributeValueSchema.safeParse(value).success).toBe(true);
  });

  it.each([
    ['no type', {}],
    ['two types', { S: 'a', N: '1' }],
    ['an unknown type', { X: 'a' }],
    ['a non-number N', { N: 'one' }],
    ['an empty N', { N: '' }],
    ['an empty SS', { SS: [] }],
    ['an empty NS', { NS: [] }],
    ['NULL false', { NULL: false }],
    ['B as a non-base64 string', { B: 'not base64!' }],
    ['B as a number array', { B: [1, 2, 3] }],
    ['a bad nested value', { M: { a: { L: [{ S: 1 }] } } }],
    ['null', null],
    ['an array', [{ S: 'a' }]],
  ])('rejects %s', (_what, value) => {
    expect(AttributeValueSchema.safeParse(value).success).toBe(false);
  });

  it('turns base64 binaries (the JSON wire shape) into Uint8Array, and keeps Uint8Array as is', () => {
    const fromJson = AttributeValueSchema.parse({ BS: ['AAH/', ''] });
    expect(fromJson.BS?.map((b) => [...b])).toEqual([[0, 1, 255], []]);
    expect(fromJson.BS?.[0]).toBeInstanceOf(Uint8Array);
    const bytes = new Uint8Array([9]);
    expect(AttributeValueSchema.parse({ B: bytes }).B).toBe(bytes);
  });

  it('names the path of a nested violation', () => {
    const r = AttributeMapSchema.safeParse({ a: { M: { b: { L: [{ S: 'ok' }, { N: 'x' }] } } } });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(['a', 'M', 'b', 'L', 1, 'N']);
  });

  it('keeps an attribute named __proto__ (zod z.record would drop it)', () => {
    const input = JSON.parse(
      '{"__proto__": {"S": "kept"}, "a": {"M": {"__proto__": {"N": "1"}}}}',
    ) as unknown;
    const out = AttributeMapSchema.parse(input as never);
    expect(Object.keys(out)).toEqual(['__proto__', 'a']);
    expect(Object.getOwnPropertyDescriptor(out, '__proto__')?.value).toEqual({ S: 'kept' });
    expect(Object.keys(out.a?.M ?? {})).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
  });

  it('accepts the nesting DynamoDB allows (32 levels) and refuses absurd nesting with a clear issue', () => {
    const nest = (levels: number): unknown => {
      let v: unknown = { S: 'leaf' };
      for (let i = 0; i < levels; i++) v = i % 2 ? { L: [v] } : { M: { k: v } };
      return v;
    };
    expect(AttributeValueSchema.safeParse(nest(32)).success).toBe(true);
    const r = AttributeValueSchema.safeParse(nest(200));
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.message).toMatch(/nested deeper than/);
  });

  it('keeps attribute order', () => {
    expect(Object.keys(AttributeMapSchema.parse({ z: { S: '1' }, a: { S: '2' }, m: { S: '3' } }))).toEqual([
      'z',
      'a',
      'm',
    ]);
  });
});

describe('KeySchema', () => {
  it('accepts one or two S/N/B attributes', () => {
    expect(KeySchema.safeParse({ pk: { S: 'a' } }).success).toBe(true);
    expect(KeySchema.safeParse({ pk: { S: 'a' }, sk: { B: 'AQ==' } }).success).toBe(true);
  });
  it.each([
    ['no attribute', {}],
    ['three attributes', { a: { S: 'a' }, b: { S: 'b' }, c: { S: 'c' } }],
    ['a map key', { pk: { M: {} } }],
    ['a BOOL key', { pk: { BOOL: true } }],
    ['an empty name', { '': { S: 'a' } }],
  ])('rejects %s', (_what, value) => {
    expect(KeySchema.safeParse(value).success).toBe(false);
  });
});

describe('attributeValuesEqual', () => {
  it('compares by type and content, binaries by bytes', () => {
    expect(attributeValuesEqual({ B: new Uint8Array([1]) }, { B: Buffer.from([1]) })).toBe(true);
    expect(attributeValuesEqual({ B: new Uint8Array([1]) }, { B: new Uint8Array([2]) })).toBe(false);
    expect(attributeValuesEqual({ S: '1' }, { N: '1' })).toBe(false);
    expect(attributeValuesEqual({ M: { a: { L: [{ S: 'x' }] } } }, { M: { a: { L: [{ S: 'x' }] } } })).toBe(
      true,
    );
    expect(attributeValuesEqual({ M: { a: { S: 'x' } } }, { M: { b: { S: 'x' } } })).toBe(false);
  });
});
