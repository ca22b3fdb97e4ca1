import { dataFileFormat, type CompressionLevels, type DataFileWriter } from '../archive/format';
import type { PreparedRow } from '../archive/rows';
import type { PlannedFile, RollPlan } from '../archive/roll';
import {
  dataFilePath,
  indexPathFor,
  manifestPath,
  type DataFormat,
  type KeyIndexRow,
} from '../archive/storage/layout';
import type { EncodedRoll } from './writer';
import type { TtlSettingsOf } from './ttl-settings';
import { InternalError } from '../core/errors';

/**
 * Builds one roll while its rows arrive: each row goes at once into its file's writer (an Avro
 * container block, or the row bytes a Parquet file is built from) and its key index line into
 * that file's index bytes, so a buffered row keeps no object alive
 * (nothing per row for the garbage collector to carry from one young generation to the next).
 * `finish` gives exactly what `planRoll` + `encodeRoll` give for the same rows (the unit tests
 * compare them): the same files in the same order, the same rows, the same key index bytes.
 */

/**
 * The fields of a key-index row that indexLine writes, in this order: the order prepareRow and
 * prepareCheckedRow create them in, so the line equals JSON.stringify({ ...index, row }) (the unit
 * tests compare). `satisfies` makes a new KeyIndexRow field a compile error here (but for those only compacted
 * files' indexes have).
 */
export const INDEX_ROW_FIELDS = {
  key: 0,
  eventID: 1,
  kind: 2,
  retractsEventID: 3,
  deletedAtMs: 4,
  sequenceNumber: 5,
  row: 6,
  // A compacted file's rows name their Kafka place; a roll's file names it once for all its rows.
} satisfies Record<Exclude<keyof KeyIndexRow, 'topic' | 'partition'>, number>;

/** One key-index row as JSON, written directly (no object spread and walk per row). */
export function indexLine(i: PreparedRow['index'], row: number): string {
  const retracts =
    i.retractsEventID !== undefined ? `,"retractsEventID":${JSON.stringify(i.retractsEventID)}` : '';
  return `{"key":${JSON.stringify(i.key)},"eventID":${JSON.stringify(i.eventID)},"kind":${JSON.stringify(i.kind)}${retracts},"deletedAtMs":${JSON.stringify(i.deletedAtMs)},"sequenceNumber":${JSON.stringify(i.sequenceNumber)},"row":${row}}`;
}

/** Growable UTF-8 bytes. */
class ByteSink {
  private buf = Buffer.allocUnsafe(16 * 1024);
  private pos = 0;

  append(s: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    const need = this.pos + 3 * s.length;
    if (need > this.buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, need));
      this.buf.copy(grown, 0, 0, this.pos);
      this.buf = grown;
    }
    this.pos += this.buf.write(s, this.pos, 'utf8');
  }

  get bytes(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}

interface FileBuilder {
  table: string;
  /** Any deletion time of the group's UTC hour (its first row's): names the file. */
  deletedAtMs: number;
  writer: DataFileWriter;
  /** Key index rows, JSON, comma-separated. */
  index: ByteSink;
  rows: number;
  firstEventID: string | null;
  lastEventID: string | null;
}

export class RollBuilder {
  /** By UTC hour, then table: the group a row belongs to (no key string built per row). */
  private readonly byGroup = new Map<number, Map<string, FileBuilder>>();
  /** By the path a file of the group would have (as planRoll, groups with one path are one file). */
  private readonly byPath = new Map<string, FileBuilder>();
  /** Rows added. */
  records = 0;
  /** Uncompressed Avro bytes added. */
  bytes = 0;
  /** Offsets of the first and the latest row added (checked against the range in finish, as planRoll does). */
  private firstOffset: bigint | null = null;
  private lastOffset: bigint | null = null;

  constructor(
    private readonly topic: string,
    private readonly partition: number,
    /** The format of the roll's data files (archive.format): a table's archive switches at a roll boundary. */
    private readonly format: DataFormat = 'avro',
  ) {}

  /** Add the next row (offsets increasing, as the partition worker takes them). */
  add(row: PreparedRow): void {
    if (this.lastOffset !== null && row.offset <= this.lastOffset)
      throw new InternalError(`rows out of offset order at ${row.offset}`);
    this.firstOffset ??= row.offset;
    this.lastOffset = row.offset;
    const hour = Math.floor(row.deletedAtMs / 3_600_000);
    let tables = this.byGroup.get(hour);
    if (!tables) {
      tables = new Map();
      this.byGroup.set(hour, tables);
    }
    let file = tables.get(row.table);
    if (!file) {
      // The offsets in the name are the same for every file of a roll: any will do for grouping.
      const pathKey = dataFilePath({
        table: row.table,
        topic: this.topic,
        partition: this.partition,
        deletedAtMs: row.deletedAtMs,
        first: 0,
        last: 0,
        format: this.format,
      });
      file = this.byPath.get(pathKey);
      if (!file) {
        file = {
          table: row.table,
          deletedAtMs: row.deletedAtMs,
          writer: dataFileFormat(this.format).newWriter(),
          index: new ByteSink(),
          rows: 0,
          firstEventID: null,
          lastEventID: null,
        };
        this.byPath.set(pathKey, file);
      }
      tables.set(row.table, file);
    }
    const before = file.writer.rawBytes;
    file.writer.add(row.avro);
    if (file.rows > 0) file.index.append(',');
    file.index.append(indexLine(row.index, file.rows));
    file.rows += 1;
    file.firstEventID ??= row.index.eventID;
    file.lastEventID = row.index.eventID;
    this.records += 1;
    this.bytes += file.writer.rawBytes - before;
  }

  /**
   * The roll over offsets [first..last]: its plan (files without rows) and its encoded files.
   * `ttlOf`: each table's TTL settings, for the formats whose files carry them (Parquet's expired_at); `levels`:
   * the compression levels of the files (each format's default when absent).
   */
  async finish(
    first: bigint,
    last: bigint,
    ttlOf: TtlSettingsOf = async () => null,
    levels: CompressionLevels = {},
  ): Promise<{ plan: RollPlan; encoded: EncodedRoll }> {
    if (last < first) throw new InternalError(`roll range ${first}..${last} is empty`);
    if (this.firstOffset !== null && this.firstOffset < first)
      throw new InternalError(`row offset ${this.firstOffset} outside roll ${first}..${last}`);
    if (this.lastOffset !== null && this.lastOffset > last)
      throw new InternalError(`row offset ${this.lastOffset} outside roll ${first}..${last}`);
    const files = [...this.byPath.values()]
      .map((f) => ({
        f,
        path: dataFilePath({
          table: f.table,
          topic: this.topic,
          partition: this.partition,
          deletedAtMs: f.deletedAtMs,
          first,
          last,
          format: this.format,
        }),
      }))
      .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    const planned: PlannedFile[] = files.map(({ f, path }) => ({
      path,
      summary: { rows: f.rows, firstEventID: f.firstEventID, lastEventID: f.lastEventID },
      indexPath: indexPathFor(path),
      table: f.table,
      rows: [],
      index: {
        file: path,
        table: f.table,
        topic: this.topic,
        partition: this.partition,
        first: first.toString(),
        last: last.toString(),
        rows: [],
      },
    }));
    const data = await Promise.all(
      files.map(async ({ f }) => f.writer.finish({ ttl: await ttlOf(f.table), ...levels })),
    );
    // encodeArchiveJson(index): the same JSON, with the rows written as they came.
    const index = planned.map((p, i) => {
      const head = JSON.stringify({ ...p.index, rows: undefined });
      return Buffer.concat([
        Buffer.from(`${head.slice(0, -1)},"rows":[`, 'utf8'),
        (files[i] as { f: FileBuilder }).f.index.bytes,
        Buffer.from(']}\n', 'utf8'),
      ]);
    });
    return {
      plan: {
        topic: this.topic,
        partition: this.partition,
        first,
        last,
        manifestPath: manifestPath(this.topic, this.partition, first, last),
        files: planned,
        records: this.records,
      },
      encoded: { data, index },
    };
  }
}
