import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { ValidationError } from '../../core/errors';
import { archivedRecordType, toAvroArchived, type AvroArchivedRecord } from '../../schemas';
import { checkContainerFraming, ContainerWriter, decodeContainer } from './avro-container';
import type { DataFormat } from '../storage/layout';
import { DATA_BLOCK_BYTES, decodeAvroFile } from './avro';
import { checkParquetFraming, columnTypeOf, decodeParquet, parquetFormat } from './parquet';
import { unzstd, writeParquet } from './parquet-write';
import type { ColumnData, ColumnValue } from './parquet-rows';
import type { CompressionLevels } from './types';

/**
 * One data file from rows of several (a compaction, docs/decisions/0037), in the order asked. Each row's values go
 * over as stored where the formats agree: a Parquet row's column values (the TTL columns it was written with
 * included), an Avro row's record; a row that changes format is converted as `archive query` converts (an Avro row
 * in a Parquet file has no `expired_at`, `ttl_mode`). The sources of one output are decoded together, so memory
 * follows the output file's size, never its hour's.
 */

export interface MergeSource {
  body: Buffer;
  path: string;
}

/** Row `row` of source `source`, which must hold `eventID` (its key index says so: checked, never trusted). */
export interface MergePick {
  source: number;
  row: number;
  eventID: string;
}

export async function mergeDataFiles(
  format: DataFormat,
  sources: readonly MergeSource[],
  picks: readonly MergePick[],
  levels: CompressionLevels = {},
): Promise<Buffer> {
  return format === 'parquet' ? mergeToParquet(sources, picks, levels) : mergeToAvro(sources, picks, levels);
}

function mismatch(path: string, row: number, eventID: string): ValidationError {
  return new ValidationError(`${path}: row ${row} is not ${eventID} as its key index says; not compacted`);
}

/** Every row of a source as an Avro archive row (a Parquet source read into the contract's shape first). */
async function avroRows(source: MergeSource): Promise<AvroArchivedRecord[]> {
  if (source.path.endsWith('.parquet'))
    return (await decodeParquet(source.body, source.path)).map(toAvroArchived);
  const { rows: framed } = checkContainerFraming(source.body, source.path);
  let decoded;
  try {
    decoded = await decodeContainer<AvroArchivedRecord>(source.body, { readerSchema: archivedRecordType });
  } catch (err) {
    throw new ValidationError(`${source.path}: ${(err as Error).message}`, { cause: err });
  }
  if (decoded.rows.length !== framed)
    throw new ValidationError(
      `${source.path}: decoded ${decoded.rows.length} rows where the blocks hold ${framed}`,
    );
  return decoded.rows;
}

async function mergeToAvro(
  sources: readonly MergeSource[],
  picks: readonly MergePick[],
  levels: CompressionLevels,
): Promise<Buffer> {
  const rows = await Promise.all(sources.map(avroRows));
  const writer = new ContainerWriter(archivedRecordType, { codec: 'deflate', blockBytes: DATA_BLOCK_BYTES });
  for (const pick of picks) {
    const source = sources[pick.source] as MergeSource;
    const row = rows[pick.source]?.[pick.row];
    if (!row || row.eventID !== pick.eventID) throw mismatch(source.path, pick.row, pick.eventID);
    writer.append(row);
  }
  return writer.finish(levels.deflateLevel);
}

/** A source read whole: its columns (name, type, nullability) and its rows as hyparquet gives them. */
interface SourceRows {
  columns: Array<Omit<ColumnData, 'data'>>;
  rows: Array<Record<string, ColumnValue>>;
}

/** A source's rows: a Parquet file's as stored (strings decoded), an Avro file's as a roll writes them. */
async function sourceRows(source: MergeSource): Promise<SourceRows> {
  if (!source.path.endsWith('.parquet')) {
    const body = await parquetFormat.encode(await decodeAvroFile(source.body, source.path), { ttl: null });
    return sourceRows({ body, path: `${source.path}.parquet` });
  }
  checkParquetFraming(source.body, source.path);
  const file = source.body.buffer.slice(
    source.body.byteOffset,
    source.body.byteOffset + source.body.length,
  ) as ArrayBuffer;
  try {
    const metadata = parquetMetadata(file);
    const total = Number(metadata.num_rows);
    const rows = (await parquetReadObjects({
      file,
      metadata,
      compressors: { ZSTD: unzstd },
      parsers: { timestampFromMilliseconds: (ms: bigint) => ms },
    })) as Array<Record<string, ColumnValue>>;
    if (rows.length !== total) throw new Error(`read ${rows.length} rows where its footer says ${total}`);
    const columns = metadata.schema.slice(1).map((e) => ({
      name: e.name,
      type: columnTypeOf(e),
      nullable: e.repetition_type !== 'REQUIRED',
    }));
    return { columns, rows };
  } catch (err) {
    throw new ValidationError(`${source.path}: not a readable Parquet file (${(err as Error).message})`, {
      cause: err,
    });
  }
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
  picks: readonly MergePick[],
  levels: CompressionLevels,
): Promise<Buffer> {
  const read = await Promise.all(sources.map(sourceRows));
  const columns: ColumnData[] = unionColumns(read.map((r) => r.columns)).map((c) => ({
    ...c,
    data: new Array<ColumnValue>(picks.length),
  }));
  picks.forEach((pick, n) => {
    const row = read[pick.source]?.rows[pick.row];
    if (row?.event_id !== pick.eventID)
      throw mismatch(sources[pick.source]?.path ?? '?', pick.row, pick.eventID);
    for (const c of columns) c.data[n] = row[c.name] ?? null;
  });
  return writeParquet(columns, levels.zstdLevel);
}
