import fc from 'fast-check';
import {
  AttributeValueSchema,
  fromAvroAttributeValue,
  fromAvroMap,
  parseAvroSchema,
  schemaRegistry,
  toAvroAttributeValue,
  toAvroMap,
  type AvroAttributeValue,
  type AttributeValue,
} from '../../../schemas';
import { attributeValueArb, itemArb } from '../../support/stream-samples';

// The AttributeValue record as it is embedded in the current stream-record schema.
const attributeValueType = parseAvroSchema({
  type: 'map',
  values: (
    schemaRegistry().latest('stream-record').type.schema() as {
      fields: { name: string; type: { fields: { name: string; type: { values: unknown } }[] } }[];
    }
  ).fields
    .find((f) => f.name === 'dynamodb')
    ?.type.fields.find((f) => f.name === 'Keys')?.type.values as never,
});

describe('SDK shape ⇄ Avro shape', () => {
  it('round-trips any AttributeValue exactly through Avro bytes', () => {
    fc.assert(
      fc.property(attributeValueArb, (value) => {
        const bytes = attributeValueType.toBuffer({ v: toAvroAttributeValue(value) });
        const back = fromAvroMap(
          attributeValueType.fromBuffer(bytes) as Record<string, AvroAttributeValue>,
        ).v;
        expect(back).toEqual(value);
      }),
      { numRuns: 500 },
    );
  });

  it('round-trips whole items, including attributes named __proto__', () => {
    let sawProto = false;
    fc.assert(
      fc.property(itemArb, (item) => {
        sawProto ||= Object.hasOwn(item, '__proto__');
        const back = fromAvroMap(
          attributeValueType.fromBuffer(attributeValueType.toBuffer(toAvroMap(item))) as never,
        );
        expect(Object.keys(back)).toEqual(Object.keys(item));
        expect(back).toEqual(item);
      }),
      { numRuns: 500 },
    );
    // Otherwise the property above proved nothing about "__proto__".
    expect(sawProto).toBe(true);
  });

  it('decodes binaries to plain Uint8Array copies, not views of the message buffer', () => {
    const bytes = attributeValueType.toBuffer({ v: toAvroAttributeValue({ B: new Uint8Array([1, 2, 3]) }) });
    const back = fromAvroMap(attributeValueType.fromBuffer(bytes) as never).v as AttributeValue;
    expect(Object.getPrototypeOf(back.B)).toBe(Uint8Array.prototype);
    bytes.fill(0);
    expect([...(back.B as Uint8Array)]).toEqual([1, 2, 3]);
  });

  it('produces values the zod contract accepts unchanged', () => {
    fc.assert(
      fc.property(attributeValueArb, (value) => {
        expect(AttributeValueSchema.parse(value)).toEqual(value);
      }),
      { numRuns: 300 },
    );
  });

  it.each([
    ['none', {}],
    ['two', { S: 'a', N: '1' }],
  ])('rejects an Avro AttributeValue with %s of its fields set', (_what, set) => {
    const avro = { ...toAvroAttributeValue({ NULL: true }), NULL: null, ...set } as AvroAttributeValue;
    expect(() => fromAvroAttributeValue(avro)).toThrow(/exactly one non-null field/);
  });

  it('keeps BOOL false and empty strings, binaries and containers (falsy but present)', () => {
    for (const v of [
      { BOOL: false },
      { S: '' },
      { B: new Uint8Array() },
      { M: {} },
      { L: [] },
    ] as AttributeValue[]) {
      expect(fromAvroAttributeValue(toAvroAttributeValue(v))).toEqual(v);
    }
  });
});
