import fc from 'fast-check';
import { SPLICING, prepareCheckedRow, prepareRow, rowBuffer, type PreparedRow } from '../../../archive/rows';
import {
  HEADERS,
  archivedRecordType,
  toAvroArchived,
  SCHEMA_FINGERPRINTS,
  checkCurrentAvro,
  decodeMessage,
  emptyAttributeValue,
  encodeRemove,
  encodeRetraction,
  headerString,
  retractionType,
  streamRecordType,
  toArchived,
  toAvroRetraction,
  toAvroStreamRecord,
  type AvroAttributeValue,
  type AvroRetraction,
  type AvroStreamRecord,
  type MessageHeaders,
} from '../../../schemas';
import { NUMBER_PATTERN } from '../../../schemas/attribute-value';
import { isNumberBytes } from '../../../schemas/avro-walk';
import { recordArb, sampleRecord, sampleRetraction } from '../../support/stream-samples';

/**
 * The fast path (checkCurrentAvro + prepareCheckedRow) must never accept what decodeMessage
 * rejects, and must build exactly the row the full path builds.
 */

const AT = { topic: 'stream', partition: 3, offset: '12345', timestamp: '1700000001999' };

/** The full path, as the archiver ran it before the fast path: the row, or the poison reason. */
function slowRow(value: Buffer, headers: MessageHeaders): PreparedRow | { rejected: string } {
  let decoded;
  try {
    decoded = decodeMessage(value, headers);
  } catch (err) {
    return { rejected: (err as Error).message };
  }
  const fingerprint = headerString(headers, HEADERS.fingerprint);
  const wire =
    fingerprint !== undefined && headerString(headers, HEADERS.encoding) === 'avro'
      ? { value, fingerprint }
      : undefined;
  return prepareRow(toArchived(decoded, AT), wire);
}

function fastRow(value: Buffer, headers: MessageHeaders): PreparedRow | null {
  const checked = checkCurrentAvro(value, headers);
  return checked ? prepareCheckedRow(checked, AT, value) : null;
}

/** The property: fast accepts ⇒ slow accepts with the identical row. Returns what happened. */
function agree(value: Buffer, headers: MessageHeaders): 'fast' | 'slow-only' | 'rejected' {
  const slow = slowRow(value, headers);
  const fast = fastRow(value, headers);
  if (fast) {
    expect(slow).not.toHaveProperty('rejected');
    expect(fast).toEqual(slow);
    expect(JSON.stringify(fast.index)).toBe(JSON.stringify((slow as PreparedRow).index));
    return 'fast';
  }
  return 'rejected' in slow ? 'rejected' : 'slow-only';
}

type Mutation = (r: AvroStreamRecord) => void;
const av = (v: Partial<AvroAttributeValue>): AvroAttributeValue => ({ ...emptyAttributeValue(), ...v });
const firstKey = (r: AvroStreamRecord): string => Object.keys(r.dynamodb.Keys)[0] as string;
/** Each breaks the contract in one way the Avro type still encodes. */
const REMOVE_MUTATIONS: Record<string, Mutation> = {
  eventIdEmpty: (r) => (r.eventID = ''),
  eventIdLong: (r) => (r.eventID = 'e'.repeat(129)),
  eventName: (r) => (r.eventName = 'INSERT'),
  eventVersion: (r) => (r.eventVersion = '1.0'),
  eventSource: (r) => (r.eventSource = 'aws:dynamo'),
  region: (r) => (r.awsRegion = 'US-EAST-1'),
  regionMismatch: (r) => (r.awsRegion = 'eu-west-1'),
  arn: (r) => (r.eventSourceARN = 'arn:aws:s3:::bucket'),
  identityType: (r) => (r.userIdentity.type = 'User'),
  identityPrincipal: (r) => (r.userIdentity.principalId = 'someone'),
  time: (r) => (r.dynamodb.ApproximateCreationDateTime = -1),
  sequence: (r) => (r.dynamodb.SequenceNumber = '123'),
  sizeZero: (r) => (r.dynamodb.SizeBytes = 0),
  sizeNegative: (r) => (r.dynamodb.SizeBytes = -5),
  viewType: (r) => (r.dynamodb.StreamViewType = 'KEYS_ONLY'),
  noKeys: (r) => (r.dynamodb.Keys = {}),
  threeKeys: (r) => {
    r.dynamodb.Keys = { a: av({ S: 'a' }), b: av({ S: 'b' }), c: av({ S: 'c' }) };
    Object.assign(r.dynamodb.OldImage, r.dynamodb.Keys);
  },
  keyEmptyName: (r) => {
    r.dynamodb.Keys = { '': av({ S: 'a' }) };
    r.dynamodb.OldImage[''] = av({ S: 'a' });
  },
  keyWrongType: (r) => {
    const k = firstKey(r);
    r.dynamodb.Keys[k] = av({ BOOL: true });
    r.dynamodb.OldImage[k] = av({ BOOL: true });
  },
  keyNotInImage: (r) => delete r.dynamodb.OldImage[firstKey(r)],
  keyDiffers: (r) => (r.dynamodb.OldImage[firstKey(r)] = av({ S: 'something else' })),
  keyNumberSpelling: (r) => {
    const k = firstKey(r);
    r.dynamodb.Keys[k] = av({ N: '1' });
    r.dynamodb.OldImage[k] = av({ N: '1.0' });
  },
  noTag: (r) => (r.dynamodb.OldImage.extra = av({})),
  twoTags: (r) => (r.dynamodb.OldImage.extra = av({ S: 'a', N: '1' })),
  badNumber: (r) => (r.dynamodb.OldImage.extra = av({ N: '1,5' })),
  emptySS: (r) => (r.dynamodb.OldImage.extra = av({ SS: [] })),
  emptyNS: (r) => (r.dynamodb.OldImage.extra = av({ NS: [] })),
  badNS: (r) => (r.dynamodb.OldImage.extra = av({ NS: ['x'] })),
  emptyBS: (r) => (r.dynamodb.OldImage.extra = av({ BS: [] })),
  nullFalse: (r) => (r.dynamodb.OldImage.extra = av({ NULL: false })),
  nestedBad: (r) => (r.dynamodb.OldImage.extra = av({ M: { inner: av({ L: [av({ N: 'NaN' })] }) } })),
  tooDeep: (r) => {
    let v = av({ S: 'leaf' });
    for (let i = 0; i < 70; i++) v = av(i % 2 ? { L: [v] } : { M: { x: v } });
    r.dynamodb.OldImage.extra = v;
  },
  // Valid ones: the fast path must take them.
  emptyAttributeName: (r) => (r.dynamodb.OldImage[''] = av({ S: 'empty names are legal in items' })),
  deepButLegal: (r) => {
    let v = av({ BOOL: true });
    for (let i = 0; i < 30; i++) v = av(i % 2 ? { L: [v] } : { M: { x: v } });
    r.dynamodb.OldImage.extra = v;
  },
};
const VALID_MUTATIONS = new Set(['emptyAttributeName', 'deepButLegal']);

function encodeAvroRemove(r: AvroStreamRecord): Buffer {
  return streamRecordType.toBuffer(r);
}

describe('fast path for current-schema Avro', () => {
  it('applies: rows are spliced with the current schemas', () => {
    expect(SPLICING).toBe(true);
  });

  it('takes every valid REMOVE and builds the same row as the full path', () => {
    fc.assert(
      fc.property(recordArb, (record) => {
        const { value, headers } = encodeRemove(record, 'avro');
        expect(agree(value, headers)).toBe('fast');
        // The spliced row is byte for byte the row encoded from the decoded record.
        const row = toArchived(decodeMessage(value, headers), AT);
        expect(
          rowBuffer((fastRow(value, headers) as PreparedRow).avro).equals(
            archivedRecordType.toBuffer(toAvroArchived(row)),
          ),
        ).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('takes a valid retraction and builds the same row', () => {
    const { value, headers } = encodeRetraction(sampleRetraction(), 'avro');
    expect(agree(value, headers)).toBe('fast');
  });

  it.each(Object.keys(REMOVE_MUTATIONS))('REMOVE mutation %s: never accepted unless valid', (name) => {
    const mutate = REMOVE_MUTATIONS[name] as Mutation;
    fc.assert(
      fc.property(recordArb, (record) => {
        const { headers } = encodeRemove(record, 'avro');
        const a = toAvroStreamRecord(record);
        mutate(a);
        const outcome = agree(encodeAvroRemove(a), headers);
        expect(outcome).toBe(VALID_MUTATIONS.has(name) ? 'fast' : 'rejected');
      }),
      { numRuns: 25 },
    );
  });

  const RETRACT_MUTATIONS: Record<string, (x: AvroRetraction) => void> = {
    eventName: (x) => (x.eventName = 'REMOVE'),
    idEmpty: (x) => (x.retractsEventID = ''),
    table: (x) => (x.table = 'a/b'),
    reasonEmpty: (x) => (x.reason = ''),
    reasonLong: (x) => (x.reason = 'r'.repeat(257)),
    time: (x) => (x.retractedAt = -3),
    keys: (x) => (x.Keys = { k: av({ L: [] }) }),
  };
  it.each(Object.keys(RETRACT_MUTATIONS))('retraction mutation %s is rejected by both', (name) => {
    const retraction = sampleRetraction();
    const { headers } = encodeRetraction(retraction, 'avro');
    const x = toAvroRetraction(retraction);
    RETRACT_MUTATIONS[name]?.(x);
    expect(agree(retractionType.toBuffer(x), headers)).toBe('rejected');
  });

  it('leaves unusual headers and other encodings to the full path', () => {
    const record = sampleRecord();
    const { value, headers } = encodeRemove(record, 'avro');
    const cases: MessageHeaders[] = [
      { ...headers, [HEADERS.table]: 'other-table' },
      { ...headers, [HEADERS.eventId]: 'another-id' },
      { ...headers, [HEADERS.kind]: 'retract' },
      { ...headers, [HEADERS.fingerprint]: SCHEMA_FINGERPRINTS.retraction },
      { ...headers, [HEADERS.fingerprint]: SCHEMA_FINGERPRINTS.streamRecord.toUpperCase() },
      { ...headers, [HEADERS.table]: ['orders', 'orders'] },
      { ...headers, [HEADERS.encoding]: 'json' },
    ];
    for (const h of cases) expect(agree(value, h)).not.toBe('fast');
    // Repeated identical headers are valid: the full path archives them.
    expect(agree(value, { ...headers, [HEADERS.table]: ['orders', 'orders'] })).toBe('slow-only');
    const json = encodeRemove(record, 'json');
    expect(agree(json.value, json.headers)).toBe('slow-only');
    // Buffers as kafkajs hands them are read like strings.
    const asBuffers = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, Buffer.from(v)]));
    expect(agree(value, asBuffers)).toBe('fast');
  });

  it('never accepts damaged bytes the full path rejects', () => {
    const { value, headers } = encodeRemove(sampleRecord(), 'avro');
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: value.length - 1 }),
        fc.integer({ min: 0, max: 255 }),
        fc.integer({ min: 0, max: value.length }),
        (at, byte, cut) => {
          const flipped = Buffer.from(value);
          flipped[at] = byte;
          agree(flipped, headers);
          agree(value.subarray(0, cut), headers);
          agree(Buffer.concat([value, Buffer.from([byte])]), headers);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('isNumberBytes (the walker checks N values on their bytes)', () => {
  const matches = (s: string): boolean => {
    const b = Buffer.from(s, 'utf8');
    return isNumberBytes(b, 0, b.length);
  };

  it('agrees with NUMBER_PATTERN on number-like and arbitrary strings', () => {
    const chars = fc.constantFrom(...'0123456789+-.eE x\u00e9\u0661\uff10'.split(''));
    fc.assert(
      fc.property(
        fc.oneof(
          fc.array(chars, { maxLength: 12 }).map((a) => a.join('')),
          fc.string(),
        ),
        (s) => {
          expect(matches(s)).toBe(NUMBER_PATTERN.test(s));
        },
      ),
      { numRuns: 5000 },
    );
    for (const s of [
      '0',
      '-1',
      '+1.',
      '.5',
      '1e5',
      '1E-5',
      '1.5e+3',
      '',
      '.',
      '-',
      'e5',
      '1e',
      '1.2.3',
      ' 1',
      '1 ',
    ])
      expect(matches(s)).toBe(NUMBER_PATTERN.test(s));
  });

  it('only looks at the given range', () => {
    const b = Buffer.from('x12.5y');
    expect(isNumberBytes(b, 1, 5)).toBe(true);
    expect(isNumberBytes(b, 0, 5)).toBe(false);
    expect(isNumberBytes(b, 1, 6)).toBe(false);
  });
});
