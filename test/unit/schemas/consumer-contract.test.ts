import fc from 'fast-check';
import { Partitioners } from 'kafkajs';
import { canonicalNumber, decodeMessage, encodeRemove, encodeRetraction, messageKey } from '../../../schemas';
import { sizeBytes } from '../../../pipeline/image';
import { recordArb, sampleRecord, sampleRetraction } from '../../support/stream-samples';

/**
 * The rules docs/stream-contract.md ("For consumers in other languages") states, each pinned with the examples the
 * page gives: a change here must change the page, and a re-implementation can run the same examples.
 */
describe('stream contract for other languages', () => {
  it('canonical key numbers: plain decimal, no sign but "-", no leading or trailing zeros, -0 is 0', () => {
    const cases: [string, string][] = [
      ['1.50', '1.5'],
      ['+1.5', '1.5'],
      ['15e-1', '1.5'],
      ['0015.000', '15'],
      ['1E3', '1000'],
      ['1.2e+2', '120'],
      ['-0.0', '0'],
      ['-000.120', '-0.12'],
      ['.5', '0.5'],
      ['5.', '5'],
      ['1e-130', '0.' + '0'.repeat(129) + '1'],
      [
        '9.9999999999999999999999999999999999999E+125',
        '99999999999999999999999999999999999999' + '0'.repeat(88),
      ],
      // Beyond any DynamoDB number (|exponent| > 1000): a normalised exponent form, never from a table.
      ['1e1001', '1e1001'],
    ];
    for (const [input, canonical] of cases)
      expect([input, canonicalNumber(input)]).toEqual([input, canonical]);
  });

  it('canonical key attribute names: sorted by UTF-16 code units, not by code points', () => {
    // U+FF61 is one code unit 0xFF61; U+1F600 is the surrogate pair 0xD83D 0xDE00, which sorts first in UTF-16
    // although its code point is larger (Python's sorted() and Go's sort.Strings would put it last).
    const key = messageKey('orders', { '\uff61': { S: 'x' }, '\u{1f600}': { S: 'y' } });
    expect(key).toBe('orders/{"\u{1f600}":{"S":"y"},"\uff61":{"S":"x"}}');
    expect(messageKey('orders', { sk: { N: '1.50' }, pk: { S: 'a' } })).toBe(
      'orders/{"pk":{"S":"a"},"sk":{"N":"1.5"}}',
    );
    // Escapes as JSON.stringify: control characters, quote and backslash; everything else literal, no spaces.
    expect(messageKey('orders', { pk: { S: 'a"\\\n\u0001é/' } })).toBe(
      'orders/{"pk":{"S":"a\\"\\\\\\n\\u0001é/"}}',
    );
  });

  it('B and BS in JSON: standard base64 alphabet (+ and /), padded with =', () => {
    const bytes = new Uint8Array([0xfb, 0xff, 0xbf, 0x00]);
    const record = sampleRecord({
      keys: { pk: { B: bytes } },
      oldImage: { pk: { B: bytes }, set: { BS: [new Uint8Array([0xff]), new Uint8Array([])] } },
    });
    const json = JSON.parse(encodeRemove(record, 'json').value.toString('utf8')) as {
      dynamodb: { Keys: { pk: { B: string } }; OldImage: { set: { BS: string[] } } };
    };
    expect(json.dynamodb.Keys.pk.B).toBe('+/+/AA==');
    expect(json.dynamodb.OldImage.set.BS).toEqual(['/w==', '']);
    expect(messageKey('orders', { pk: { B: bytes } })).toBe('orders/{"pk":{"B":"+/+/AA=="}}');
    // Decoders refuse the URL-safe alphabet and missing padding.
    const good = encodeRemove(record, 'json');
    for (const bad of ['-_-_AA==', '+/+/AA']) {
      const value = Buffer.from(good.value.toString('utf8').replaceAll('+/+/AA==', bad));
      expect(() => decodeMessage(value, good.headers)).toThrow(
        expect.objectContaining({ reason: 'schema-violation' }),
      );
    }
  });

  it('SizeBytes: UTF-8 bytes of compact JSON Keys plus compact JSON OldImage, key attributes counted twice', () => {
    fc.assert(
      fc.property(recordArb, (record) => {
        const { Keys, OldImage } = record.dynamodb;
        const json = JSON.parse(encodeRemove(record, 'json').value.toString('utf8')) as {
          dynamodb: { Keys: unknown; OldImage: unknown };
        };
        const expected =
          Buffer.byteLength(JSON.stringify(json.dynamodb.Keys)) +
          Buffer.byteLength(JSON.stringify(json.dynamodb.OldImage));
        return sizeBytes(Keys, OldImage) === expected;
      }),
      { numRuns: 300 },
    );
    // {"pk":{"S":"é"}} is 17 bytes (é is 2 in UTF-8): 17 for Keys + 17 for the same OldImage.
    expect(sizeBytes({ pk: { S: 'é' } }, { pk: { S: 'é' } })).toBe(34);
  });

  it('RETRACT messages carry no SequenceNumber', () => {
    const r = sampleRetraction();
    const json = JSON.parse(encodeRetraction(r, 'json').value.toString('utf8')) as Record<string, unknown>;
    expect(Object.keys(json).sort()).toEqual([
      'Keys',
      'eventName',
      'reason',
      'retractedAt',
      'retractsEventID',
      'table',
    ]);
  });

  it("the producer's partitioner is Kafka's: (murmur2(UTF-8 key) & 0x7fffffff) mod partitions", () => {
    // Signed murmur2 values from Apache Kafka's own UtilsTest.testMurmur2 (the Java client).
    const java: [string, number][] = [
      ['21', -973932308],
      ['foobar', -790332482],
      ['a-little-bit-long-string', -985981536],
      ['a-little-bit-longer-string', -1486304829],
      ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
      ['abc', 479470107],
    ];
    const partitioner = Partitioners.DefaultPartitioner();
    for (const n of [6, 7, 12]) {
      const partitionMetadata = Array.from({ length: n }, (_, i) => ({
        partitionId: i,
        leader: 1,
        replicas: [1],
        isr: [1],
        partitionErrorCode: 0,
      }));
      for (const [key, hash] of java) {
        const p = partitioner({ topic: 't', partitionMetadata, message: { key, value: null } });
        expect([key, n, p]).toEqual([key, n, (hash & 0x7fffffff) % n]);
      }
    }
  });
});
