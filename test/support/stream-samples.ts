import fc from 'fast-check';
import {
  PoisonRecordError,
  deriveEventId,
  formatSequenceNumber,
  type AttributeMap,
  type AttributeValue,
  type PoisonReason,
  type Retraction,
  type StreamRecord,
} from '../../schemas';
import { removeRecord } from './archive-fixture';

/** A valid REMOVE record for `table`, with `oldImage` (which must contain the key attributes). */
export function sampleRecord(
  overrides: { table?: string; keys?: AttributeMap; oldImage?: AttributeMap; seq?: number } = {},
): StreamRecord {
  const table = overrides.table ?? 'orders';
  const keys = overrides.keys ?? { pk: { S: 'order#1' }, sk: { N: '7' } };
  const oldImage = overrides.oldImage ?? {
    ...keys,
    expiresAt: { N: '1700000000' },
    payload: { B: new Uint8Array([0, 1, 2, 250, 255]) },
    tags: { SS: ['a', 'b'] },
    nested: { M: { list: { L: [{ NULL: true }, { BOOL: false }, { S: '' }] } } },
  };
  return removeRecord({
    table,
    eventID: deriveEventId({ table, keys, seq: overrides.seq ?? 1 }),
    keys,
    image: oldImage,
    deletedAtSec: 1700000001,
    sequenceNumber: formatSequenceNumber(overrides.seq ?? 1),
    sizeBytes: 123,
    viewType: 'NEW_AND_OLD_IMAGES',
    streamLabel: '2024-01-01T00:00:00.000',
  });
}

export function sampleRetraction(record: StreamRecord = sampleRecord()): Retraction {
  return {
    eventName: 'RETRACT',
    retractsEventID: record.eventID,
    table: record.eventSourceARN.split('/')[1] as string,
    Keys: record.dynamodb.Keys,
    reason: 'condition-failed',
    retractedAt: 1700000002345,
  };
}

// Strings as DynamoDB stores them: well-formed Unicode (UTF-8 on the wire), including empty.
const text = fc.string({ unit: 'grapheme', maxLength: 12 });
/** Attribute names, with the awkward ones forced in now and then. */
const attrName = fc.oneof(
  { weight: 8, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', 'NULL', 'M'),
  },
);
/** Numbers in the spelling DynamoDB returns (plain decimal, no exponent, no trailing zeros). */
export const numberArb = fc.oneof(
  fc.bigInt({ min: -(10n ** 38n) + 1n, max: 10n ** 38n - 1n }).map(String),
  fc
    .tuple(fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }), fc.integer({ min: 1, max: 18 }))
    .map(([m, scale]) => {
      const neg = m < 0n;
      const digits = (neg ? -m : m).toString().padStart(scale + 1, '0');
      const s = `${digits.slice(0, -scale)}.${digits.slice(-scale)}`.replace(/\.?0+$/, '');
      return s === '0' || s === '' ? '0' : (neg ? '-' : '') + s;
    }),
);
const bytes = fc.uint8Array({ maxLength: 24 });

export const attributeValueArb: fc.Arbitrary<AttributeValue> = fc.letrec<{ value: AttributeValue }>(
  (tie) => ({
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.record({ S: text }),
      fc.record({ N: numberArb }),
      fc.record({ B: bytes }),
      fc.record({ SS: fc.uniqueArray(text, { minLength: 1, maxLength: 4 }) }),
      fc.record({ NS: fc.uniqueArray(numberArb, { minLength: 1, maxLength: 4 }) }),
      fc.record({ BS: fc.array(bytes, { minLength: 1, maxLength: 4 }) }),
      fc.record({ NULL: fc.constant(true as const) }),
      fc.record({ BOOL: fc.boolean() }),
      fc.record({ M: fc.dictionary(attrName, tie('value'), { maxKeys: 4, noNullPrototype: true }) }),
      fc.record({ L: fc.array(tie('value'), { maxLength: 4 }) }),
    ) as fc.Arbitrary<AttributeValue>,
  }),
).value;

export const itemArb: fc.Arbitrary<AttributeMap> = fc.dictionary(attrName, attributeValueArb, {
  maxKeys: 6,
  noNullPrototype: true,
});

export const keyValueArb: fc.Arbitrary<AttributeValue> = fc.oneof(
  fc.record({ S: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 10 }) }),
  fc.record({ N: numberArb }),
  fc.record({ B: fc.uint8Array({ minLength: 1, maxLength: 10 }) }),
) as fc.Arbitrary<AttributeValue>;

/** A random valid REMOVE record: random key (1 or 2 attributes) merged into a random item. */
export const recordArb: fc.Arbitrary<StreamRecord> = fc
  .tuple(
    fc.constantFrom('orders', 'my-table.v2', 'T_1'),
    keyValueArb,
    fc.option(keyValueArb, { nil: undefined }),
    itemArb,
    fc.integer({ min: 1, max: 1_000_000 }),
  )
  .map(([table, hash, range, item, seq]) => {
    const keys: AttributeMap = range ? { pk: hash, sk: range } : { pk: hash };
    // Object.fromEntries keeps a generated "__proto__" attribute as an own property.
    const oldImage = Object.fromEntries([
      ...Object.entries(item).filter(([k]) => !Object.hasOwn(keys, k)),
      ...Object.entries(keys),
    ]);
    return sampleRecord({ table, keys, oldImage, seq });
  });

/** The reason of the PoisonRecordError `fn` throws; 'no error' or 'other error' otherwise. */
export function poisonReason(fn: () => unknown): PoisonReason | 'no error' | 'other error' {
  try {
    fn();
    return 'no error';
  } catch (err) {
    return err instanceof PoisonRecordError ? err.reason : 'other error';
  }
}
