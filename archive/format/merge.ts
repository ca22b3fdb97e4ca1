import { parquetMetadata, parquetRead } from 'hyparquet';
import { ValidationError } from '../../core/errors';
import { archivedRecordType, toAvroArchived, type AvroArchivedRecord } from '../../schemas';
import { ContainerWriter } from './avro-container';
import type { DataFormat } from '../storage/layout';
import { DATA_BLOCK_BYTES, decodeAvroFile, decodeAvroRows } from './avro';
import { checkParquetFraming, columnTypeOf, decodeParquet, parquetFormat } from './parquet';
import { unzstd, writeParquet } from './parquet-write';
import type { ColumnData, ColumnValue } from './parquet-rows';
import type { CompressionLevels } from './types';

/**
 * One data file from rows of several (a compaction, docs/decisions/0037), in the order asked. Each row's values go
 * over as stored where the formats agree: a Parquet row's column values (the TTL columns it was written with
 * included), an Avro row's record; a row that changes format is converted as `archive query` converts (an Avro row
 * in a Parquet file has no `expired_at`, `ttl_mode`). The sources are read and decoded one after another (a few
 * read ahead), each source's values put straight at their places in the output's columns (Parquet) or rows
 * (Avro): memory follows the output file's rows, never its hour's, and no row object is built for Parquet.
 */

export interface MergeSource {
  path: string;
  /** The source's bytes, read (and checked against what sealed them) when the merge reaches it. */
  read: () => Promise<Buffer>;
}

/**
 * Where each source's rows go: `at[s][r]` is the output row of row r of source s (-1: left out); `eventIDs[n]` is
 * the eventID output row n must hold (its key index says so: checked, never trusted).
 */
export interface MergeOrder {
  rows: number;
  at: readonly Int32Array[];
  eventIDs: readonly string[];
}

/** Source bodies read ahead of the one being decoded (S3 is mostly waiting; a source is a small file). */
const READ_AHEAD = 8;

export async function mergeDataFiles(
  format: DataFormat,
  sources: readonly MergeSource[],
  order: MergeOrder,
  levels: CompressionLevels = {},
): Promise<Buffer> {
  return format === 'parquet' ? mergeToParquet(sources, order, levels) : mergeToAvro(sources, order, levels);
}

function mismatch(path: string, row: number, eventID: string): ValidationError {
  return new ValidationError(`${path}: row ${row} is not ${eventID} as its key index says; not compacted`);
}

/** A source whose rows do not cover the rows its key index names (fewer rows, or an eventID column missing). */
function shortOf(path: string, found: number, named: number): ValidationError {
  return new ValidationError(
    `${path}: holds ${found} of the ${named} rows its key index names; not compacted`,
  );
}

/** Rows of `at` that go to the output. */
function named(at: Int32Array): number {
  let n = 0;
  for (const p of at) if (p >= 0) n++;
  return n;
}

/** `use` of each source's body in order, the next READ_AHEAD bodies read meanwhile. */
async function eachBody(
  sources: readonly MergeSource[],
  use: (index: number, body: Buffer) => Promise<void>,
): Promise<void> {
  const pending: Array<Promise<Buffer>> = [];
  const start = (i: number): void => {
    if (i >= sources.length) return;
    const p = (sources[i] as MergeSource).read();
    p.catch(() => undefined); // awaited in turn below; a failure ahead of its turn is not unhandled
    pending[i] = p;
  };
  for (let i = 0; i < Math.min(READ_AHEAD, sources.length); i++) start(i);
  for (let i = 0; i < sources.length; i++) {
    const body = await (pending[i] as Promise<Buffer>);
    delete pending[i];
    start(i + READ_AHEAD);
    await use(i, body);
  }
}

/** Every row of a source as an Avro archive row (a Parquet source read into the contract's shape first). */
async function avroRows(path: string, body: Buffer): Promise<AvroArchivedRecord[]> {
  if (path.endsWith('.parquet')) return (await decodeParquet(body, path)).map(toAvroArchived);
  return decodeAvroRows(body, path);
}

async function mergeToAvro(
  sources: readonly MergeSource[],
  order: MergeOrder,
  levels: CompressionLevels,
): Promise<Buffer> {
  const out = new Array<AvroArchivedRecord | undefined>(order.rows);
  await eachBody(sources, async (s, body) => {
    const { path } = sources[s] as MergeSource;
    const at = order.at[s] as Int32Array;
    const rows = await avroRows(path, body);
    let placed = 0;
    for (const [r, row] of rows.entries()) {
      const n = at[r] ?? -1;
      if (n < 0) continue;
      const eventID = order.eventIDs[n] as string;
      if (row.eventID !== eventID) throw mismatch(path, r, eventID);
      out[n] = row;
      placed++;
    }
    if (placed !== named(at)) throw shortOf(path, placed, named(at));
  });
  const writer = new ContainerWriter(archivedRecordType, { codec: 'deflate', blockBytes: DATA_BLOCK_BYTES });
  for (const row of out) if (row) writer.append(row);
  return writer.finish(levels.deflateLevel);
}

/** The output's columns being filled: one array of the output's rows per column name, null until set. */
class OutputColumns {
  readonly data = new Map<string, ColumnValue[]>();
  constructor(readonly rows: number) {}

  of(name: string): ColumnValue[] {
    let data = this.data.get(name);
    if (!data) {
      data = new Array<ColumnValue>(this.rows).fill(null);
      this.data.set(name, data);
    }
    return data;
  }
}

/**
 * A Parquet source's values put at their output rows, column chunk by column chunk as hyparquet decodes them (no
 * row objects); its `event_id` values checked against the key index. Returns the source's columns.
 */
async function placeParquet(
  path: string,
  body: Buffer,
  at: Int32Array,
  eventIDs: readonly string[],
  out: OutputColumns,
): Promise<Array<Omit<ColumnData, 'data'>>> {
  checkParquetFraming(body, path);
  // hyparquet reads an ArrayBuffer: the body's own when it has one to itself (a file read), else a copy.
  const whole = body.byteOffset === 0 && body.length === body.buffer.byteLength;
  const file = (
    whole ? body.buffer : body.buffer.slice(body.byteOffset, body.byteOffset + body.length)
  ) as ArrayBuffer;
  // Kept, not thrown, in hyparquet's promise callbacks; thrown once the read is over.
  const failures: ValidationError[] = [];
  let placed = 0;
  let columns: Array<Omit<ColumnData, 'data'>>;
  try {
    const metadata = parquetMetadata(file);
    await parquetRead({
      file,
      metadata,
      compressors: { ZSTD: unzstd },
      parsers: { timestampFromMilliseconds: (ms: bigint) => ms },
      onChunk: ({ columnName, columnData, rowStart }) => {
        const data = out.of(columnName);
        const isEventID = columnName === 'event_id';
        for (let i = 0; i < columnData.length; i++) {
          const n = at[rowStart + i] ?? -1;
          if (n < 0) continue;
          const v = (columnData[i] ?? null) as ColumnValue;
          data[n] = v;
          if (!isEventID) continue;
          if (v === eventIDs[n]) placed++;
          else if (failures.length === 0) failures.push(mismatch(path, rowStart + i, eventIDs[n] as string));
        }
      },
    });
    columns = metadata.schema.slice(1).map((e) => ({
      name: e.name,
      type: columnTypeOf(e),
      nullable: e.repetition_type !== 'REQUIRED',
    }));
  } catch (err) {
    throw new ValidationError(`${path}: not a readable Parquet file (${(err as Error).message})`, {
      cause: err,
    });
  }
  if (failures[0]) throw failures[0];
  if (placed !== named(at)) throw shortOf(path, placed, named(at));
  return columns;
}

/**
 * The output's columns: every column of every source, in the first source's order, a `key_<attribute>` column
 * another source adds after the others of its kind and any other at the end; nullable where some source lacks it.
 */
function unionColumns(all: Array<Array<Omit<ColumnData, 'data'>>>): Array<Omit<ColumnData, 'data'>> {
  const out: Array<Omit<ColumnData, 'data'>> = [];
  for (const columns of all) {
    for (const c of columns) {
      const seen = out.find((o) => o.name === c.name);
      if (seen) {
        if (seen.type !== c.type)
          throw new ValidationError(`column ${c.name} is ${seen.type} in one file and ${c.type} in another`);
        seen.nullable ||= c.nullable;
        continue;
      }
      const entry = { name: c.name, type: c.type, nullable: c.nullable };
      const lastKey = out.map((o) => o.name.startsWith('key')).lastIndexOf(true);
      if (c.name.startsWith('key_') && lastKey >= 0) out.splice(lastKey + 1, 0, entry);
      else out.push(entry);
    }
  }
  // A column some source lacks is null in that source's rows.
  for (const o of out) if (!all.every((columns) => columns.some((c) => c.name === o.name))) o.nullable = true;
  return out;
}

async function mergeToParquet(
  sources: readonly MergeSource[],
  order: MergeOrder,
  levels: CompressionLevels,
): Promise<Buffer> {
  const out = new OutputColumns(order.rows);
  const columnsOf: Array<Array<Omit<ColumnData, 'data'>>> = [];
  await eachBody(sources, async (s, body) => {
    const { path } = sources[s] as MergeSource;
    const at = order.at[s] as Int32Array;
    if (path.endsWith('.parquet')) columnsOf[s] = await placeParquet(path, body, at, order.eventIDs, out);
    else {
      // An Avro roll into a Parquet file: its rows as a roll writes them, then placed as any Parquet source's.
      const parquet = await parquetFormat.encode(await decodeAvroFile(body, path), { ttl: null });
      columnsOf[s] = await placeParquet(path, parquet, at, order.eventIDs, out);
    }
  });
  // Sources mostly share one schema: the union of the distinct ones is the same, for a fraction of the work.
  const distinct = new Map(columnsOf.map((c) => [JSON.stringify(c), c]));
  const columns: ColumnData[] = unionColumns([...distinct.values()]).map((c) => ({
    ...c,
    data: out.of(c.name),
  }));
  return writeParquet(columns, levels.zstdLevel);
}
