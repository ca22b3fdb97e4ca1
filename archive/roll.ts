import {
  dataFilePath,
  indexPathFor,
  manifestPath,
  type DataFormat,
  type KeyIndex,
  type Manifest,
} from './storage/layout';
import { InternalError } from '../core/errors';
import type { PreparedRow } from './rows';

/**
 * Pure planning of one roll: which files a range of one partition becomes, with their rows, key
 * indexes and manifest. No I/O here, so the layout rules are tested without Kafka or storage.
 */

export interface PlannedFile {
  /** Data file path (its extension names the format). */
  path: string;
  indexPath: string;
  table: string;
  rows: PreparedRow[];
  index: KeyIndex;
  /** Row count and the eventIDs of the first and last rows: what the complete manifest seals besides the digests. */
  summary: FileSummary;
}

export interface FileSummary {
  rows: number;
  firstEventID: string | null;
  lastEventID: string | null;
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
  format: DataFormat = 'avro',
): RollPlan {
  if (last < first) throw new InternalError(`roll range ${first}..${last} is empty`);
  const groups = new Map<string, { table: string; rows: PreparedRow[] }>();
  // The path depends only on (table, UTC hour): build it once per group, not once per row.
  const pathOf = new Map<string, string>();
  let previous = first - 1n;
  for (const row of rows) {
    if (row.offset < first || row.offset > last)
      throw new InternalError(`row offset ${row.offset} outside roll ${first}..${last}`);
    if (row.offset <= previous) throw new InternalError(`rows out of offset order at ${row.offset}`);
    previous = row.offset;
    const groupKey = `${Math.floor(row.deletedAtMs / 3_600_000)}/${row.table}`;
    let path = pathOf.get(groupKey);
    if (path === undefined) {
      path = dataFilePath({
        table: row.table,
        topic,
        partition,
        deletedAtMs: row.deletedAtMs,
        first,
        last,
        format,
      });
      pathOf.set(groupKey, path);
    }
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
      summary: {
        rows: g.rows.length,
        firstEventID: g.rows[0]?.index.eventID ?? null,
        lastEventID: g.rows[g.rows.length - 1]?.index.eventID ?? null,
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
