import type { _Record as StreamsApiRecord } from '@aws-sdk/client-dynamodb-streams';
import { TTL_USER_IDENTITY, type StreamRecord } from '../schemas';

/**
 * A DynamoDB Streams record as the streams role publishes it: DynamoDB's own REMOVE record in the stream contract's
 * shape (the Lambda shape, ApproximateCreationDateTime in epoch seconds), its eventID, SequenceNumber, Keys, OldImage
 * and SizeBytes unchanged. INSERT and MODIFY records are never published; a REMOVE without DynamoDB's TTL identity
 * only when the table's every REMOVE is asked for, and then without an identity, so consumers can tell it apart.
 */

/** Which REMOVE records a followed stream contributes: DynamoDB's TTL deletions, or every deletion. */
export type RemovesTaken = 'ttl' | 'all';

export type StreamsRecordOutcome =
  | { kind: 'publish'; record: StreamRecord }
  /** An INSERT or a MODIFY. */
  | { kind: 'not-remove' }
  /** A REMOVE that DynamoDB's TTL did not make (an application's delete), with only TTL deletions asked for. */
  | { kind: 'not-ttl' }
  /** A REMOVE without its old image: the stream's view type keeps none (KEYS_ONLY, NEW_IMAGE). */
  | { kind: 'no-old-image' };

/** True when DynamoDB's TTL made the record (the identity AWS documents for a TTL deletion). */
export function isDynamoTtlRecord(r: StreamsApiRecord): boolean {
  return (
    r.userIdentity?.Type === TTL_USER_IDENTITY.type &&
    r.userIdentity.PrincipalId === TTL_USER_IDENTITY.principalId
  );
}

/**
 * What to do with one record read from the stream `streamArn`. The record is not validated here: the publisher
 * validates every record against the contract before it is sent.
 */
export function outcomeOf(
  r: StreamsApiRecord,
  streamArn: string,
  removes: RemovesTaken,
): StreamsRecordOutcome {
  if (r.eventName !== 'REMOVE') return { kind: 'not-remove' };
  const ttl = isDynamoTtlRecord(r);
  if (!ttl && removes === 'ttl') return { kind: 'not-ttl' };
  const d = r.dynamodb;
  if (d?.OldImage === undefined) return { kind: 'no-old-image' };
  const created = d.ApproximateCreationDateTime;
  return {
    kind: 'publish',
    record: {
      eventID: r.eventID ?? '',
      eventName: 'REMOVE',
      // The version of the contract's record format (DynamoDB Streams' own is 1.1), whatever the server wrote.
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: r.awsRegion ?? regionOf(streamArn),
      dynamodb: {
        ApproximateCreationDateTime: created === undefined ? 0 : Math.floor(created.getTime() / 1000),
        Keys: d.Keys ?? {},
        OldImage: d.OldImage,
        SequenceNumber: d.SequenceNumber ?? '',
        SizeBytes: d.SizeBytes ?? 0,
        StreamViewType: d.StreamViewType === 'NEW_AND_OLD_IMAGES' ? 'NEW_AND_OLD_IMAGES' : 'OLD_IMAGE',
      },
      eventSourceARN: streamArn,
      ...(ttl ? { userIdentity: { ...TTL_USER_IDENTITY } } : {}),
    },
  };
}

/** The region named in a stream ARN (arn:aws:dynamodb:<region>:...). */
function regionOf(arn: string): string {
  return arn.split(':')[3] ?? '';
}
