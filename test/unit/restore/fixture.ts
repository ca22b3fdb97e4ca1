import { ContainerWriter } from '../../../archiver/container';
import type { ArchiveStorage } from '../../../archiver/storage';
import {
  dataFilePath,
  encodeArchiveJson,
  indexPathFor,
  manifestPath,
  type KeyIndex,
} from '../../../archiver/storage/layout';
import {
  archivedRecordType,
  canonicalJson,
  deriveEventId,
  formatSequenceNumber,
  streamArn,
  toAvroArchived,
  type ArchivedRecord,
  type AttributeMap,
  type StreamRecord,
} from '../../../schemas';

/**
 * Archive fixtures for restore/replay tests, written through the storage API in the shared layout:
 * data files (Avro containers of archive rows), key indexes beside them and a complete manifest per
 * roll. The real archiver writes the same layout; integration tests also run against its output.
 */

let seq = 1000n;

export interface RemoveSpec {
  table: string;
  keys: AttributeMap;
  /** The deleted image; the keys are merged in. */
  image?: AttributeMap;
  /** Deletion time, epoch seconds. */
  deletedAtS: number;
  sequenceNumber?: bigint;
  eventID?: string;
}

export function removeRow(
  spec: RemoveSpec,
  at: { topic?: string; partition?: number; offset?: bigint } = {},
): ArchivedRecord {
  const sequence = spec.sequenceNumber ?? seq++;
  const image = { ...(spec.image ?? {}), ...spec.keys };
  const eventID =
    spec.eventID ??
    deriveEventId({ table: spec.table, key: canonicalJson(spec.keys), sequence: sequence.toString() });
  const record: StreamRecord = {
    eventID,
    eventName: 'REMOVE',
    eventVersion: '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: 'us-east-1',
    dynamodb: {
      ApproximateCreationDateTime: spec.deletedAtS,
      Keys: spec.keys,
      OldImage: image,
      SequenceNumber: formatSequenceNumber(sequence),
      SizeBytes: Buffer.byteLength(canonicalJson(image)),
      StreamViewType: 'OLD_IMAGE',
    },
    eventSourceARN: streamArn('us-east-1', '000000000000', spec.table, '2025-01-01T00:00:00.000'),
    userIdentity: { type: 'Service', principalId: 'dynamodb.amazonaws.com' },
  };
  return {
    topic: at.topic ?? 'ttlstream.remove',
    partition: at.partition ?? 0,
    offset: (at.offset ?? 0n).toString(),
    kafkaTimestamp: spec.deletedAtS * 1000,
    kind: 'remove',
    table: spec.table,
    eventID,
    record,
    retraction: null,
  };
}

export function retractRow(of: ArchivedRecord, retractedAtMs: number): ArchivedRecord {
  if (!of.record) throw new Error('retractRow needs a REMOVE row');
  return {
    ...of,
    kind: 'retract',
    kafkaTimestamp: retractedAtMs,
    record: null,
    retraction: {
      eventName: 'RETRACT',
      retractsEventID: of.eventID,
      table: of.table,
      Keys: of.record.dynamodb.Keys,
      reason: 'condition-failed',
      retractedAt: retractedAtMs,
    },
  };
}

function deletedAtMsOf(row: ArchivedRecord): number {
  if (row.record) return row.record.dynamodb.ApproximateCreationDateTime * 1000;
  if (row.retraction) return row.retraction.retractedAt;
  throw new Error('row without body');
}

/**
 * Write `rows` as one roll of one partition (offsets first, first+1, ...): one data file per
 * (table, deletion hour), each with its key index, then the manifest. Returns the data file paths.
 */
export async function writeRoll(
  storage: ArchiveStorage,
  rows: ArchivedRecord[],
  at: { topic?: string; partition?: number; first?: bigint } = {},
): Promise<string[]> {
  const topic = at.topic ?? 'ttlstream.remove';
  const partition = at.partition ?? 0;
  const first = at.first ?? 0n;
  const last = first + BigInt(rows.length) - 1n;
  const groups = new Map<string, { table: string; rows: ArchivedRecord[] }>();
  rows.forEach((row, i) => {
    const placed = { ...row, topic, partition, offset: (first + BigInt(i)).toString() };
    const path = dataFilePath({
      table: row.table,
      topic,
      partition,
      deletedAtMs: deletedAtMsOf(row),
      first,
      last,
    });
    const group = groups.get(path) ?? { table: row.table, rows: [] };
    group.rows.push(placed);
    groups.set(path, group);
  });
  for (const [path, group] of groups) {
    const writer = new ContainerWriter(archivedRecordType, { blockBytes: 2048 });
    for (const row of group.rows) writer.append(toAvroArchived(row));
    await storage.put(path, await writer.finish());
    const index: KeyIndex = {
      file: path,
      table: group.table,
      topic,
      partition,
      first: first.toString(),
      last: last.toString(),
      rows: group.rows.map((row, n) => ({
        key: canonicalJson(row.record ? row.record.dynamodb.Keys : row.retraction?.Keys),
        eventID: row.eventID,
        kind: row.kind,
        ...(row.kind === 'retract' ? { retractsEventID: row.eventID } : {}),
        deletedAtMs: deletedAtMsOf(row),
        sequenceNumber: row.record?.dynamodb.SequenceNumber ?? '',
        row: n,
      })),
    };
    await storage.put(indexPathFor(path), encodeArchiveJson(index));
  }
  await storage.put(
    manifestPath(topic, partition, first, last),
    encodeArchiveJson({
      state: 'complete',
      first: first.toString(),
      last: last.toString(),
      files: [...groups.keys()],
      records: rows.length,
    }),
  );
  return [...groups.keys()];
}
