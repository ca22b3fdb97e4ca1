import avsc from 'avsc';
import {
  parseAvroSchema,
  streamRecordType,
  type AvroAttributeValue,
  type AvroStreamRecord,
} from '../../schemas';

/**
 * Avro bytes written by hand where avsc's writer never goes: arrays and maps in blocks that give their size in bytes
 * (a negative count, then the size), which other Avro writers use and every reader must take.
 */

const str = avsc.Type.forSchema('string');
const long = avsc.Type.forSchema('long');

/** The AttributeValue record of the current stream-record schema, alone. */
export const attributeValueType = parseAvroSchema(
  (streamRecordType.schema() as { fields: Array<{ name: string; type: unknown }> }).fields
    .map((f) => f.type)
    .flatMap((t) => (t as { fields?: Array<{ name: string; type: { values?: unknown } }> }).fields ?? [])
    .find((f) => f.name === 'Keys')?.type.values as avsc.Schema,
);

/** A map written in two blocks: the first with a negative count and its size in bytes, the second without. */
export function sizedMap(m: Record<string, AvroAttributeValue>): Buffer {
  const entries = Object.keys(m).map((k) =>
    Buffer.concat([str.toBuffer(k), attributeValueType.toBuffer(m[k])]),
  );
  const half = Math.ceil(entries.length / 2);
  const first = entries.slice(0, half);
  const rest = entries.slice(half);
  const parts: Buffer[] = [];
  if (first.length > 0) {
    const body = Buffer.concat(first);
    parts.push(long.toBuffer(-first.length), long.toBuffer(body.length), body);
  }
  if (rest.length > 0) parts.push(long.toBuffer(rest.length), ...rest);
  parts.push(long.toBuffer(0));
  return Buffer.concat(parts);
}

/** A stream record's bytes field by field, its two maps (Keys, OldImage) written by `map`. */
export function streamRecordBytes(
  r: AvroStreamRecord,
  map: (m: Record<string, AvroAttributeValue>) => Buffer,
): Buffer {
  const d = r.dynamodb;
  return Buffer.concat([
    ...[r.eventID, r.eventName, r.eventVersion, r.eventSource, r.awsRegion].map((s) => str.toBuffer(s)),
    long.toBuffer(d.ApproximateCreationDateTime),
    map(d.Keys),
    map(d.OldImage),
    str.toBuffer(d.SequenceNumber),
    long.toBuffer(d.SizeBytes),
    ...[d.StreamViewType, r.eventSourceARN, r.userIdentity.type, r.userIdentity.principalId].map((s) =>
      str.toBuffer(s),
    ),
  ]);
}
