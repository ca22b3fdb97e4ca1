import type { _Record as StreamsApiRecord } from '@aws-sdk/client-dynamodb-streams';
import { deletedBy, encodeRemove, decodeMessage, StreamRecordSchema } from '../../../schemas';
import { outcomeOf } from '../../../streams/record';

/**
 * A DynamoDB Streams record as the streams role takes it: the record shape AWS documents for a TTL deletion
 * (userIdentity Service / dynamodb.amazonaws.com), which moto's server never writes, an application's delete, and the
 * records that are never published.
 */
const ARN = 'arn:aws:dynamodb:eu-west-1:123456789012:table/sessions/stream/2026-12-07T05:37:26.296';
const ttlDeletion: StreamsApiRecord = {
  eventID: '7de3041dd709b024af6f29e4fa13d34c',
  eventName: 'REMOVE',
  eventVersion: '1.1',
  eventSource: 'aws:dynamodb',
  awsRegion: 'eu-west-1',
  dynamodb: {
    ApproximateCreationDateTime: new Date('2026-12-07T05:40:01.500Z'),
    Keys: { pk: { S: 'session#1' } },
    OldImage: {
      pk: { S: 'session#1' },
      expiresAt: { N: '1796622000' },
      blob: { B: new Uint8Array([1, 2, 3]) },
    },
    SequenceNumber: '111100000000021637458402',
    SizeBytes: 86,
    StreamViewType: 'OLD_IMAGE',
  },
  userIdentity: { Type: 'Service', PrincipalId: 'dynamodb.amazonaws.com' },
};
const { userIdentity: _none, ...applicationDelete } = ttlDeletion;

describe('outcomeOf: what the streams role does with a record of a followed stream', () => {
  it("publishes a TTL deletion as DynamoDB's own record in the contract's shape", () => {
    const out = outcomeOf(ttlDeletion, ARN, 'ttl');
    expect(out.kind).toBe('publish');
    if (out.kind !== 'publish') return;
    expect(out.record).toEqual({
      eventID: '7de3041dd709b024af6f29e4fa13d34c',
      eventName: 'REMOVE',
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: 'eu-west-1',
      dynamodb: {
        ApproximateCreationDateTime: 1796622001,
        Keys: { pk: { S: 'session#1' } },
        OldImage: ttlDeletion.dynamodb?.OldImage,
        SequenceNumber: '111100000000021637458402',
        SizeBytes: 86,
        StreamViewType: 'OLD_IMAGE',
      },
      eventSourceARN: ARN,
      userIdentity: { type: 'Service', principalId: 'dynamodb.amazonaws.com' },
    });
    expect(StreamRecordSchema.safeParse(out.record).success).toBe(true);
    expect(deletedBy(out.record)).toBe('dynamodb');
  });

  it('leaves out INSERT and MODIFY always, and a REMOVE without the TTL identity unless every REMOVE is asked for', () => {
    expect(outcomeOf({ ...ttlDeletion, eventName: 'INSERT' }, ARN, 'all').kind).toBe('not-remove');
    expect(outcomeOf({ ...ttlDeletion, eventName: 'MODIFY' }, ARN, 'all').kind).toBe('not-remove');
    expect(outcomeOf(applicationDelete, ARN, 'ttl').kind).toBe('not-ttl');
    const other = outcomeOf(
      { ...ttlDeletion, userIdentity: { Type: 'Service', PrincipalId: 'other' } },
      ARN,
      'ttl',
    );
    expect(other.kind).toBe('not-ttl');
  });

  it('with every REMOVE, an application delete is published without an identity, in Avro and JSON alike', () => {
    const out = outcomeOf(applicationDelete, ARN, 'all');
    if (out.kind !== 'publish') throw new Error(`expected publish, got ${out.kind}`);
    expect(out.record.userIdentity).toBeUndefined();
    expect(deletedBy(out.record)).toBe('application');
    for (const encoding of ['avro', 'json'] as const) {
      const { value, headers } = encodeRemove(out.record, encoding);
      const decoded = decodeMessage(value, headers);
      expect(decoded.kind).toBe('remove');
      if (decoded.kind === 'remove') expect(decoded.record).toEqual(out.record);
      if (encoding === 'json') expect(JSON.parse(value.toString())).not.toHaveProperty('userIdentity');
    }
  });

  it('a REMOVE without its old image (KEYS_ONLY, NEW_IMAGE) cannot be published', () => {
    const keysOnly = { ...ttlDeletion, dynamodb: { ...ttlDeletion.dynamodb, OldImage: undefined } };
    expect(outcomeOf(keysOnly, ARN, 'ttl').kind).toBe('no-old-image');
  });
});
