import { parseConfig } from '../../../core/config';
import { buildRemoveRecord } from '../../../pipeline/publisher';
import { StreamRecordSchema, decodeMessage, encodeRemove, isTtlDelete } from '../../../schemas';
import { sizeBytes } from '../../../pipeline/image';

describe('REMOVE records built by the producer', () => {
  const config = parseConfig({ region: 'eu-west-1' });
  const keys = { pk: { S: 'a' } };
  const image = { pk: { S: 'a' }, ttl: { N: '1700000000' }, bin: { B: new Uint8Array([9]) } };
  const record = buildRemoveRecord(config, {
    table: 'orders',
    keys,
    image,
    eventID: '0123456789abcdef0123456789abcdef',
    sequenceNumber: '001700000000123000000',
    decidedAtMs: 1_700_000_123_456,
    sizeBytes: sizeBytes(keys, image),
  });

  it('satisfies the stream contract and carries the service identity', () => {
    expect(StreamRecordSchema.safeParse(record).success).toBe(true);
    expect(isTtlDelete(record)).toBe(true);
    expect(record.userIdentity).toEqual({ type: 'Service', principalId: 'dynamodb.amazonaws.com' });
    expect(record.eventSourceARN).toBe(
      'arn:aws:dynamodb:eu-west-1:000000000000:table/orders/stream/ttlstream',
    );
    expect(record.dynamodb.StreamViewType).toBe('OLD_IMAGE');
    expect(record.dynamodb.ApproximateCreationDateTime).toBe(1_700_000_123);
    expect(record.dynamodb.SizeBytes).toBe(
      JSON.stringify({ pk: { S: 'a' } }).length +
        JSON.stringify({ pk: { S: 'a' }, ttl: { N: '1700000000' }, bin: { B: 'CQ==' } }).length,
    );
  });

  it.each(['avro', 'json'] as const)(
    'round-trips through the %s encoding with the image intact',
    (encoding) => {
      const e = encodeRemove(record, encoding);
      const d = decodeMessage(e.value, e.headers);
      expect(d.kind).toBe('remove');
      if (d.kind !== 'remove') return;
      expect(d.record.dynamodb.OldImage).toEqual(image);
      expect(d.record.eventID).toBe(record.eventID);
    },
  );
});
