import avsc from 'avsc';
import fc from 'fast-check';
import {
  ATTRIBUTE_TYPES,
  archivedRecordType,
  emptyAttributeValue,
  loadSchemaVersions,
  parseAvroSchema,
  retractionType,
  streamRecordType,
  toAvroRetraction,
  toAvroStreamRecord,
  type AvroArchivedRecord,
  type AvroRetraction,
  type AvroStreamRecord,
} from '../../../schemas';
import {
  ATTRIBUTE_FIELD,
  AvroReader,
  Bail,
  READ_FINGERPRINTS,
  readArchivedRecord,
  readAttributeMap,
  readRetraction,
  readStreamRecord,
} from '../../../schemas/avro-reader';
import { attributeValueType, sizedMap, streamRecordBytes } from '../../support/avro-blocks';
import { recordArb } from '../../support/stream-samples';

/** avsc's long as a bigint: every long exact, to write and read the edges avsc's number type cannot. */
const BigLong = avsc.types.LongType.__with({
  fromBuffer: (b: Buffer) => b.readBigInt64LE(),
  toBuffer: (n: bigint) => {
    const b = Buffer.alloc(8);
    b.writeBigInt64LE(n);
    return b;
  },
  fromJSON: (n: unknown) => BigInt(n as string),
  toJSON: (n: bigint) => Number(n),
  isValid: (n: unknown) => typeof n === 'bigint',
  compare: (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0),
});
const bigLongType = avsc.Type.forSchema('long', { registry: { long: BigLong } });
const MIN_LONG = -(2n ** 63n);
const MAX_LONG = 2n ** 63n - 1n;
const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** The longs at the edges: of a varint's byte lengths, of 32 bits, of a safe integer, of 64 bits. */
const EDGES: bigint[] = [0n, 1n, -1n, 63n, -64n, 64n, -65n, 8191n, -8192n, 2n ** 31n - 1n, -(2n ** 31n)];
for (const e of [2n ** 52n, SAFE - 1n, SAFE, SAFE + 1n, 2n ** 56n, MAX_LONG])
  EDGES.push(e, -e, e + 1n, -e - 1n);
EDGES.push(MIN_LONG);
const inRange = (n: bigint) => n >= MIN_LONG && n <= MAX_LONG;
const longArb = fc.oneof(
  fc.constantFrom(...EDGES.filter(inRange)),
  fc.bigInt({ min: MIN_LONG, max: MAX_LONG }),
);

/** Longs avsc's own (number) long type writes and reads exactly: its float arithmetic loses below −2^52. */
const avscLongArb = fc.oneof(
  fc.constantFrom(
    0,
    1,
    -1,
    63,
    -64,
    64,
    -65,
    2 ** 31 - 1,
    -(2 ** 31),
    2 ** 32,
    2 ** 52,
    -(2 ** 52),
    2 ** 53 - 2,
  ),
  fc.bigInt({ min: -(2n ** 52n), max: SAFE - 1n }).map(Number),
);

/** Same content and, map by map, the same key order (the archive's JSON texts follow it). */
function expectSame(actual: unknown, expected: unknown): void {
  expect(actual).toEqual(expected);
  expect(JSON.stringify(actual)).toBe(JSON.stringify(expected));
}

const streamArb: fc.Arbitrary<AvroStreamRecord> = fc
  .tuple(recordArb, avscLongArb, avscLongArb)
  .map(([record, created, size]) => {
    const avro = toAvroStreamRecord(record);
    return { ...avro, dynamodb: { ...avro.dynamodb, ApproximateCreationDateTime: created, SizeBytes: size } };
  });

const retractionArb: fc.Arbitrary<AvroRetraction> = fc.tuple(recordArb, avscLongArb).map(([record, at]) =>
  toAvroRetraction({
    eventName: 'RETRACT',
    retractsEventID: record.eventID,
    table: 'orders',
    Keys: record.dynamodb.Keys,
    reason: 'item-changed',
    retractedAt: at,
  }),
);

const archivedArb: fc.Arbitrary<AvroArchivedRecord> = fc
  .tuple(
    fc.option(streamArb, { nil: null }),
    fc.option(retractionArb, { nil: null }),
    avscLongArb,
    fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
  )
  .map(([record, retraction, kafkaTimestamp, partition]) => ({
    topic: 'ttlstream.remove',
    partition,
    offset: '12',
    kafkaTimestamp,
    kind: record ? 'remove' : 'retract',
    table: 'orders',
    eventID: 'e-1',
    record,
    retraction,
  }));

describe('AvroReader: longs', () => {
  it('reads every long exactly as a bigint, and as a number exactly when it is a safe integer', () => {
    fc.assert(
      fc.property(longArb, (n) => {
        const bytes = bigLongType.toBuffer(n);
        const big = new AvroReader(bytes);
        expect(big.bigLong()).toBe(n);
        expect(big.pos).toBe(bytes.length);
        const num = new AvroReader(bytes);
        if (n >= -SAFE && n <= SAFE) {
          expect(num.long()).toBe(Number(n));
          expect(num.pos).toBe(bytes.length);
        } else expect(() => num.long()).toThrow(Bail);
      }),
      { numRuns: 1000, examples: EDGES.filter(inRange).map((e) => [e]) },
    );
  });

  it('reads what avsc reads, where avsc reads exactly', () => {
    const numberLong = avsc.Type.forSchema('long');
    fc.assert(
      fc.property(avscLongArb, (n) => {
        const bytes = numberLong.toBuffer(n);
        expect(new AvroReader(bytes).long()).toBe(numberLong.fromBuffer(bytes));
      }),
      { numRuns: 1000 },
    );
  });

  it('refuses a varint longer than a long and bytes that end inside one', () => {
    expect(() => new AvroReader(Buffer.from('ffffffffffffffffff03', 'hex')).bigLong()).toThrow(Bail);
    expect(() => new AvroReader(Buffer.from('ffffffffffffffffffff01', 'hex')).bigLong()).toThrow(Bail);
    expect(() => new AvroReader(Buffer.from('ffff', 'hex')).long()).toThrow(Bail);
    expect(() => new AvroReader(Buffer.alloc(0)).long()).toThrow(Bail);
  });
});

describe('AvroReader: records, compared with avsc on random records of the stream schema', () => {
  it('reads a stream record as avsc decodes it', () => {
    fc.assert(
      fc.property(streamArb, (record) => {
        const bytes = streamRecordType.toBuffer(record);
        const r = new AvroReader(bytes);
        expectSame(readStreamRecord(r), streamRecordType.fromBuffer(bytes));
        expect(r.pos).toBe(bytes.length);
      }),
      { numRuns: 150 },
    );
  });

  it('reads a retraction as avsc decodes it', () => {
    fc.assert(
      fc.property(retractionArb, (retraction) => {
        const bytes = retractionType.toBuffer(retraction);
        const r = new AvroReader(bytes);
        expectSame(readRetraction(r), retractionType.fromBuffer(bytes));
        expect(r.pos).toBe(bytes.length);
      }),
      { numRuns: 150 },
    );
  });

  it('reads an archive row as avsc decodes it, and rows end to end', () => {
    fc.assert(
      fc.property(fc.array(archivedArb, { minLength: 1, maxLength: 3 }), (rows) => {
        const bytes = Buffer.concat(rows.map((row) => archivedRecordType.toBuffer(row)));
        const r = new AvroReader(bytes);
        for (const row of rows)
          expectSame(readArchivedRecord(r), archivedRecordType.fromBuffer(archivedRecordType.toBuffer(row)));
        expect(r.pos).toBe(bytes.length);
      }),
      { numRuns: 100 },
    );
  });

  it('refuses a record cut short at any byte (Bail), where avsc finds it truncated', () => {
    fc.assert(
      fc.property(streamArb, fc.nat(), (record, cut) => {
        const bytes = streamRecordType.toBuffer(record);
        const prefix = bytes.subarray(0, cut % bytes.length);
        expect(() => readStreamRecord(new AvroReader(prefix))).toThrow(Bail);
        expect(() => streamRecordType.fromBuffer(prefix)).toThrow();
      }),
      { numRuns: 150 },
    );
  });
});

describe('AvroReader: blocks with and without a byte size', () => {
  it('reads maps in sized blocks as avsc does', () => {
    const mapType = parseAvroSchema({ type: 'map', values: attributeValueType.schema() as avsc.Schema });
    fc.assert(
      fc.property(streamArb, (record) => {
        // The hand-made writer is avsc's, block for block, when blocks carry no size.
        expect(streamRecordBytes(record, (m) => mapType.toBuffer(m))).toEqual(
          streamRecordType.toBuffer(record),
        );
        const sized = streamRecordBytes(record, sizedMap);
        const r = new AvroReader(sized);
        expectSame(readStreamRecord(r), streamRecordType.fromBuffer(sized));
        expect(r.pos).toBe(sized.length);
      }),
      { numRuns: 60 },
    );
  });

  it('reads a map of one sized block and its end', () => {
    const m = {
      a: { ...emptyAttributeValue(), S: 'x' },
      b: { ...emptyAttributeValue(), BOOL: true },
      c: { ...emptyAttributeValue(), N: '1' },
    };
    const bytes = sizedMap(m);
    expect(bytes[0]).toBe(3); // a count of -2 (zig-zag), then the block's size
    expectSame(readAttributeMap(new AvroReader(bytes)), m);
  });
});

/** The first record named `name` in a schema (by its name or its full name). */
function findRecord(schema: unknown, name: string): { fields: Array<{ name: string }> } | undefined {
  if (Array.isArray(schema)) {
    for (const s of schema) {
      const found = findRecord(s, name);
      if (found) return found;
    }
    return undefined;
  }
  if (typeof schema !== 'object' || schema === null) return undefined;
  const t = schema as {
    type?: unknown;
    name?: unknown;
    fields?: Array<{ name: string; type: unknown }>;
    items?: unknown;
    values?: unknown;
  };
  if (t.type === 'record' && (t.name === name || t.name === `ttlstream.${name}`) && t.fields)
    return { fields: t.fields };
  return findRecord([...(t.fields ?? []).map((f) => f.type), t.type, t.items, t.values], name);
}

describe('what the reader is written for', () => {
  it("the AttributeValue field indexes are the order of the schemas' AttributeValue record", () => {
    for (const v of loadSchemaVersions()) {
      const record = findRecord(v.type.schema(), 'AttributeValue');
      expect(record?.fields.map((f) => f.name)).toEqual([...ATTRIBUTE_TYPES]);
    }
    expect(ATTRIBUTE_TYPES.map((t) => ATTRIBUTE_FIELD[t])).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('the record readers name the version 1 schemas by their fingerprints', () => {
    const v1 = (name: string) =>
      loadSchemaVersions().find((v) => v.name === name && v.version === 1)?.fingerprint;
    expect(READ_FINGERPRINTS).toEqual({
      streamRecord: v1('stream-record'),
      retraction: v1('retraction'),
      archivedRecord: v1('archived-record'),
    });
  });
});
