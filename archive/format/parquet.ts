import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import type { SchemaElement } from 'hyparquet';
import { ValidationError } from '../../core/errors';
import { fromPlainArchived, toAvroArchived, type ArchivedRecord } from '../../schemas';
import { rowBytesRoom, writeRowBytes, type RowBytes } from '../rows';
import { parquetColumns, type ColumnData } from './parquet-rows';
import { parquetEncodingPool } from './parquet-pool';
import { unzstd, writeParquet } from './parquet-write';
import type { ColumnType, ColumnValue } from './parquet-rows';
import type { DataFileContext, DataFileFormat, DataFileWriter, KeptRows } from './types';

/**
 * Parquet data files (docs/decisions/0031), written by parquet-write.ts and read with hyparquet
 * (both pure JavaScript): one row group per 100 000 rows (a roll's file is at most a few of them),
 * zstd pages (node:zlib), statistics on the small columns, none on the two image columns (each
 * value is a whole item: min/max would copy two items into the footer), no bloom filters. An
 * erasure rewrites a file from its kept rows (`encode`), so no statistic, dictionary or page of
 * the new file ever saw an erased row (test/unit/archive-tools/erase/parquet-erase.test.ts scans for it).
 */

/** Rows kept as their Avro bytes, in chunks (a roll's file grows to megabytes: no doubling copies). */
const CHUNK_BYTES = 1024 * 1024;

class ParquetFileWriter implements DataFileWriter {
  private readonly chunks: Array<{ buf: Buffer; used: number }> = [];
  private rows = 0;
  private raw = 0;

  add(row: RowBytes): void {
    const room = rowBytesRoom(row);
    let chunk = this.chunks.at(-1);
    if (!chunk || chunk.buf.length - chunk.used < room) {
      // At least 1 MiB: never from Node's shared buffer pool, so each chunk owns its ArrayBuffer and can be moved.
      chunk = { buf: Buffer.allocUnsafe(Math.max(CHUNK_BYTES, room)), used: 0 };
      this.chunks.push(chunk);
    }
    const end = writeRowBytes(chunk.buf, chunk.used, row);
    this.raw += end - chunk.used;
    chunk.used = end;
    this.rows += 1;
  }

  get rowCount(): number {
    return this.rows;
  }

  get rawBytes(): number {
    return this.raw;
  }

  /** Encoded on an encoding thread (parquet-pool.ts): the chunks move there, so this writer is done with them. */
  finish(context: DataFileContext): Promise<Buffer> {
    const chunks = this.chunks.map(({ buf, used }) => new Uint8Array(buf.buffer, 0, used));
    this.chunks.length = 0;
    return parquetEncodingPool.encode(chunks, context);
  }
}

/** A Parquet row as hyparquet reads it (timestamps as epoch ms, INT64 as bigint, JSON parsed). */
interface ParquetRow {
  event_id: string;
  event_name: string;
  table_name: string;
  key: string;
  deleted_at: number;
  user_identity_type: string | null;
  principal_id: string | null;
  size_bytes: bigint | null;
  topic: string;
  partition: number;
  offset: bigint;
  kafka_timestamp: number;
  is_retraction: boolean;
  retraction_reason: string | null;
  sequence_number: string | null;
  event_version: string | null;
  event_source: string | null;
  aws_region: string | null;
  event_source_arn: string | null;
  stream_view_type: string | null;
  /** JSON text. */
  old_image: string | null;
}

/** The archive row a Parquet row holds, in the contract's plain (Lambda JSON) shape. */
function plainRow(p: ParquetRow): unknown {
  const prefix = {
    topic: p.topic,
    partition: p.partition,
    offset: String(p.offset),
    kafkaTimestamp: p.kafka_timestamp,
    table: p.table_name,
    eventID: p.event_id,
  };
  const keys: unknown = JSON.parse(p.key);
  const image = p.old_image;
  if (p.is_retraction)
    return {
      ...prefix,
      kind: 'retract',
      record: null,
      retraction: {
        eventName: p.event_name,
        retractsEventID: p.event_id,
        table: p.table_name,
        Keys: keys,
        reason: p.retraction_reason,
        retractedAt: p.deleted_at,
      },
    };
  return {
    ...prefix,
    kind: 'remove',
    retraction: null,
    record: {
      eventID: p.event_id,
      eventName: p.event_name,
      eventVersion: p.event_version,
      eventSource: p.event_source,
      awsRegion: p.aws_region,
      dynamodb: {
        ApproximateCreationDateTime: p.deleted_at / 1000,
        Keys: keys,
        OldImage: image === null ? null : JSON.parse(image),
        SequenceNumber: p.sequence_number,
        SizeBytes: p.size_bytes === null ? null : Number(p.size_bytes),
        StreamViewType: p.stream_view_type,
      },
      eventSourceARN: p.event_source_arn,
      ...(p.user_identity_type === null && p.principal_id === null
        ? {}
        : { userIdentity: { type: p.user_identity_type, principalId: p.principal_id } }),
    },
  };
}

const READ_COLUMNS = [
  'event_id',
  'event_name',
  'table_name',
  'key',
  'deleted_at',
  'user_identity_type',
  'principal_id',
  'size_bytes',
  'topic',
  'partition',
  'offset',
  'kafka_timestamp',
  'is_retraction',
  'retraction_reason',
  'sequence_number',
  'event_version',
  'event_source',
  'aws_region',
  'event_source_arn',
  'stream_view_type',
  'old_image',
];

const PARQUET_MAGIC = Buffer.from('PAR1', 'latin1');

/**
 * A Parquet file starts and ends with PAR1, its footer's length before the last one: a file cut
 * short (an interrupted copy) is named as truncated rather than left to the reader's own message.
 */
export function checkParquetFraming(body: Buffer, path: string): void {
  if (body.length < 4 || !body.subarray(0, 4).equals(PARQUET_MAGIC))
    throw new ValidationError(`${path}: not a Parquet file (no PAR1 at its start)`);
  const footer = body.length >= 12 ? body.readUInt32LE(body.length - 8) : -1;
  if (!body.subarray(body.length - 4).equals(PARQUET_MAGIC) || footer < 0 || footer + 12 > body.length)
    throw new ValidationError(`${path}: truncated Parquet file (no whole footer at its end)`);
}

/** Every row of a Parquet data file, validated; a damaged file is an error naming it, never fewer rows. */
export async function decodeParquet(body: Buffer, path: string): Promise<ArchivedRecord[]> {
  checkParquetFraming(body, path);
  const file = toArrayBuffer(body);
  let rows: ParquetRow[];
  let expected: number;
  try {
    expected = Number(parquetMetadata(file).num_rows);
    rows = (await parquetReadObjects({
      file,
      columns: READ_COLUMNS,
      compressors: { ZSTD: unzstd },
      parsers: { timestampFromMilliseconds: (ms: bigint) => Number(ms) },
    })) as ParquetRow[];
  } catch (err) {
    throw new ValidationError(`${path}: not a readable Parquet file (${(err as Error).message})`, {
      cause: err,
    });
  }
  if (rows.length !== expected)
    throw new ValidationError(`${path}: read ${rows.length} rows where its footer says ${expected}`);
  return rows.map((row, n) => {
    try {
      return fromPlainArchived(plainRow(row));
    } catch (err) {
      throw new ValidationError(`${path} row ${n}: ${(err as Error).message}`, { cause: err });
    }
  });
}

/** Our column type of a column as a file's schema gives it (a column added later reads the same way). */
export function columnTypeOf(e: SchemaElement): ColumnType {
  if (e.converted_type === 'UTF8') return 'STRING';
  if (e.converted_type === 'TIMESTAMP_MILLIS') return 'TIMESTAMP';
  switch (e.type) {
    case 'INT64':
    case 'INT32':
    case 'BOOLEAN':
    case 'DOUBLE':
    case 'BYTE_ARRAY':
      return e.type;
    default:
      throw new ValidationError(`column ${e.name}: a ${e.type} column is not one the archive writes`);
  }
}

function toArrayBuffer(body: Buffer): ArrayBuffer {
  return body.buffer.slice(body.byteOffset, body.byteOffset + body.length) as ArrayBuffer;
}

/** The kept rows' stored values (bytes, raw timestamps) written as a new file with the same columns. */
async function keepParquetRows(body: Buffer, path: string, keep: number[]): Promise<KeptRows> {
  const file = toArrayBuffer(body);
  let columns: ColumnData[];
  let total: number;
  try {
    const metadata = parquetMetadata(file);
    total = Number(metadata.num_rows);
    const rows = (await parquetReadObjects({
      file,
      metadata,
      compressors: { ZSTD: unzstd },
      utf8: false,
      parsers: {
        timestampFromMilliseconds: (ms: bigint) => ms,
        jsonFromBytes: (bytes: Uint8Array) => bytes,
        stringFromBytes: (bytes: Uint8Array) => bytes,
      },
    })) as Array<Record<string, ColumnValue>>;
    if (rows.length !== total) throw new Error(`read ${rows.length} rows where its footer says ${total}`);
    columns = metadata.schema.slice(1).map((e) => ({
      name: e.name,
      type: columnTypeOf(e),
      nullable: e.repetition_type !== 'REQUIRED',
      data: keep.map((n) => {
        const row = rows[n];
        if (!row) throw new Error(`no row ${n}`);
        return row[e.name] ?? null;
      }),
    }));
  } catch (err) {
    throw new ValidationError(`${path}: not a readable Parquet file (${(err as Error).message})`, {
      cause: err,
    });
  }
  const ids = columns.find((c) => c.name === 'event_id');
  if (!ids) throw new ValidationError(`${path}: no event_id column`);
  const eventIDs = ids.data.map((v) => Buffer.from(v as Uint8Array).toString('utf8'));
  return { data: writeParquet(columns), total, eventIDs };
}

export const parquetFormat: DataFileFormat = {
  name: 'parquet',
  newWriter: () => new ParquetFileWriter(),
  decode: decodeParquet,
  encode: async (rows: ArchivedRecord[], context: DataFileContext) =>
    writeParquet(parquetColumns(rows.map(toAvroArchived), context), context.zstdLevel),
  keepRows: keepParquetRows,
};
