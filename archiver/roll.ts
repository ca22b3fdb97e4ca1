import { archivedRecordType, canonicalJson, toAvroArchived, type ArchivedRecord } from '../schemas';
import {
  dataFilePath,
  indexPathFor,
  manifestPath,
  type KeyIndex,
  type KeyIndexRow,
  type Manifest,
} from './storage/layout';

/**
 * Pure planning of one roll: which files a range of one partition becomes, with their rows, key
 * indexes and manifest. No I/O here, so the layout rules are tested without Kafka or storage.
 */

/** When the deletion happened: REMOVE → ApproximateCreationDateTime (seconds), retraction → retractedAt (ms). */
export function deletedAtMs(row: ArchivedRecord): number {
  if (row.kind === 'remove' && row.record) return row.record.dynamodb.ApproximateCreationDateTime * 1000;
  if (row.kind === 'retract' && row.retraction) return row.retraction.retractedAt;
  throw new TypeError(`archive row of kind ${row.kind} without its body`);
}

/** The identity used for de-duplication: a REMOVE's eventID, or the eventID a retraction retracts. */
export function dedupKeyOf(kind: 'remove' | 'retract', eventID: string): string {
  return `${kind === 'remove' ? 'r' : 'x'}:${eventID}`;
}

/**
 * A row ready for the archive, kept instead of the decoded record while it waits in a buffer:
 * the Avro bytes (encoded once, when the message arrives, so a row that cannot be written is
 * dead-lettered at once instead of failing a whole roll later) and what the layout and key index
 * need. About the size of the message, where a decoded record is several times larger.
 */
export interface PreparedRow {
  offset: bigint;
  table: string;
  deletedAtMs: number;
  dedupKey: string;
  avro: Buffer;
  index: Omit<KeyIndexRow, 'row'>;
}

/** Encode and index one archive row; throws when the row cannot be represented in the archive. */
export function prepareRow(row: ArchivedRecord): PreparedRow {
  const keys = row.kind === 'remove' ? row.record?.dynamodb.Keys : row.retraction?.Keys;
  if (!keys) throw new TypeError(`archive row of kind ${row.kind} without its body`);
  const at = deletedAtMs(row);
  return {
    offset: BigInt(row.offset),
    table: row.table,
    deletedAtMs: at,
    dedupKey: dedupKeyOf(row.kind, row.eventID),
    avro: archivedRecordType.toBuffer(toAvroArchived(row)),
    index: {
      key: canonicalJson(keys),
      eventID: row.eventID,
      kind: row.kind,
      ...(row.kind === 'retract' ? { retractsEventID: row.eventID } : {}),
      deletedAtMs: at,
      sequenceNumber: row.record?.dynamodb.SequenceNumber ?? '',
    },
  };
}

export interface PlannedFile {
  /** Data file path (Avro container). */
  path: string;
  indexPath: string;
  table: string;
  rows: PreparedRow[];
  index: KeyIndex;
}

export interface RollPlan {
  topic: string;
  partition: number;
  first: bigint;
  last: bigint;
  manifestPath: string;
  files: PlannedFile[];
  /** Rows written (poison, replayed and duplicate messages of the range are not rows). */
  records: number;
}

/**
 * Group the rows of offsets [first..last] of one partition by (table, UTC deletion hour): one
 * data file per group, rows in offset order (as given; out-of-order input is refused), files in
 * path order. Offsets of the range without a row (poison, replayed, duplicates, gaps) are still
 * covered by the roll: the manifests of a partition form an unbroken chain of offset ranges.
 */
export function planRoll(
  topic: string,
  partition: number,
  first: bigint,
  last: bigint,
  rows: PreparedRow[],
): RollPlan {
  if (last < first) throw new RangeError(`roll range ${first}..${last} is empty`);
  const groups = new Map<string, { table: string; rows: PreparedRow[] }>();
  let previous = first - 1n;
  for (const row of rows) {
    if (row.offset < first || row.offset > last)
      throw new RangeError(`row offset ${row.offset} outside roll ${first}..${last}`);
    if (row.offset <= previous) throw new RangeError(`rows out of offset order at ${row.offset}`);
    previous = row.offset;
    const path = dataFilePath({
      table: row.table,
      topic,
      partition,
      deletedAtMs: row.deletedAtMs,
      first,
      last,
    });
    let group = groups.get(path);
    if (!group) {
      group = { table: row.table, rows: [] };
      groups.set(path, group);
    }
    group.rows.push(row);
  }
  const files = [...groups.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([path, g]): PlannedFile => ({
      path,
      indexPath: indexPathFor(path),
      table: g.table,
      rows: g.rows,
      index: {
        file: path,
        table: g.table,
        topic,
        partition,
        first: first.toString(),
        last: last.toString(),
        rows: g.rows.map((r, n) => ({ ...r.index, row: n })),
      },
    }));
  return {
    topic,
    partition,
    first,
    last,
    manifestPath: manifestPath(topic, partition, first, last),
    files,
    records: rows.length,
  };
}

export function manifestOf(plan: RollPlan, state: Manifest['state']): Manifest {
  return {
    state,
    first: plan.first.toString(),
    last: plan.last.toString(),
    files: plan.files.map((f) => f.path),
    records: plan.records,
  };
}
