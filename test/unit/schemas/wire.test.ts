import fc from 'fast-check';
import type { KafkaMessage } from 'kafkajs';
import { classifyMessage } from '../../../archiver/classify';
import { RecentIds } from '../../../archiver/dedup';
import {
  CONFLUENT_PREFIX_BYTES,
  HEADERS,
  PoisonRecordError,
  decodeMessage,
  encodeRemove,
  encodeRetraction,
  frameConfluent,
  inConfluentFormat,
  type MessageHeaders,
} from '../../../schemas';
import { poisonReason, recordArb, sampleRecord, sampleRetraction } from '../../support/stream-samples';

function kafkaMessage(value: Buffer, headers: MessageHeaders): KafkaMessage {
  return {
    key: Buffer.from('t/k'),
    value,
    headers,
    timestamp: '1700000000000',
    offset: '9',
    attributes: 0,
  } as KafkaMessage;
}

describe('Confluent wire format (decision 0025)', () => {
  it('frames the Avro body behind magic byte 0 and the 4-byte big-endian schema id', () => {
    const framed = frameConfluent(0x01020304, Buffer.from([9, 8, 7]));
    expect([...framed]).toEqual([0, 1, 2, 3, 4, 9, 8, 7]);
    expect(() => frameConfluent(-1, Buffer.alloc(0))).toThrow(RangeError);
    expect(() => frameConfluent(2 ** 31, Buffer.alloc(0))).toThrow(RangeError);
  });

  it('a framed message carries the id header and the bare body after 5 bytes; JSON cannot be framed', () => {
    const bare = encodeRemove(sampleRecord(), 'avro');
    const framed = inConfluentFormat(bare, 42);
    expect(framed.headers[HEADERS.schemaId]).toBe('42');
    expect(framed.headers[HEADERS.fingerprint]).toBe(bare.headers[HEADERS.fingerprint]);
    expect(framed.value.subarray(CONFLUENT_PREFIX_BYTES).equals(bare.value)).toBe(true);
    expect(framed.value.readUInt32BE(1)).toBe(42);
    expect(() => inConfluentFormat(encodeRemove(sampleRecord(), 'json'), 42)).toThrow(PoisonRecordError);
  });

  it('decodes every record the same in both formats', () => {
    fc.assert(
      fc.property(recordArb, fc.integer({ min: 0, max: 2 ** 31 - 1 }), (record, id) => {
        const bare = encodeRemove(record, 'avro');
        const framed = inConfluentFormat(bare, id);
        expect(decodeMessage(framed.value, framed.headers)).toEqual(decodeMessage(bare.value, bare.headers));
      }),
      { numRuns: 200 },
    );
    const retraction = encodeRetraction(sampleRetraction(), 'avro');
    const framed = inConfluentFormat(retraction, 7);
    expect(decodeMessage(framed.value, framed.headers)).toEqual(
      decodeMessage(retraction.value, retraction.headers),
    );
  });

  it('a prefix that disagrees with its header, or a header without a prefix, is poison', () => {
    const framed = inConfluentFormat(encodeRemove(sampleRecord(), 'avro'), 42);
    const otherId = { ...framed.headers, [HEADERS.schemaId]: '43' };
    expect(poisonReason(() => decodeMessage(framed.value, otherId))).toBe('schema-violation');
    const bare = encodeRemove(sampleRecord(), 'avro');
    // A bare body that happens to begin with a non-zero byte, under a header claiming the framing.
    const claimed = { ...bare.headers, [HEADERS.schemaId]: '42' };
    const reason = poisonReason(() => decodeMessage(Buffer.concat([Buffer.from([1]), bare.value]), claimed));
    expect(reason).toBe('undecodable');
    expect(poisonReason(() => decodeMessage(Buffer.from([0, 0, 0]), claimed))).toBe('undecodable');
    expect(
      poisonReason(() => decodeMessage(framed.value, { ...framed.headers, [HEADERS.schemaId]: 'x' })),
    ).toBe('missing-headers');
  });

  it('the archiver archives the same row from either format (the Avro body, spliced)', () => {
    fc.assert(
      fc.property(recordArb, (record) => {
        const bare = encodeRemove(record, 'avro');
        const framed = inConfluentFormat(bare, 5);
        const fromBare = classifyMessage('t', 0, kafkaMessage(bare.value, bare.headers), new RecentIds(4));
        const fromFramed = classifyMessage(
          't',
          0,
          kafkaMessage(framed.value, framed.headers),
          new RecentIds(4),
        );
        expect(fromFramed.kind).toBe('row');
        expect(fromFramed).toEqual(fromBare);
      }),
      { numRuns: 100 },
    );
    const retraction = encodeRetraction(sampleRetraction(), 'avro');
    const framed = inConfluentFormat(retraction, 6);
    expect(classifyMessage('t', 0, kafkaMessage(framed.value, framed.headers), new RecentIds(4))).toEqual(
      classifyMessage('t', 0, kafkaMessage(retraction.value, retraction.headers), new RecentIds(4)),
    );
  });

  it('the archiver dead-letters a framed message whose prefix is wrong instead of archiving its bytes', () => {
    const framed = inConfluentFormat(encodeRemove(sampleRecord(), 'avro'), 5);
    framed.value.writeUInt32BE(6, 1);
    const result = classifyMessage('t', 0, kafkaMessage(framed.value, framed.headers), new RecentIds(4));
    expect(result).toMatchObject({ kind: 'poison', reason: 'schema-violation' });
  });
});
