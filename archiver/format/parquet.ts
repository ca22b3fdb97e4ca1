import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { parquetWriteBuffer, type ColumnSource } from 'hyparquet-writer';
import type { SchemaElement } from 'hyparquet';
import zlib from 'node:zlib';
import { ValidationError } from '../../core/errors';
import {
  archivedRecordType,
  fromPlainArchived,
  toAvroArchived,
  type ArchivedRecord,
  type AvroArchivedRecord,
} from '../../schemas';
import { rowBytesRoom, writeRowBytes, type RowBytes } from '../roll';
import { parquetColumns, type ColumnData } from './parquet-rows';
import type { ColumnType, ColumnValue } from './parquet-rows';
import type { DataFileContext, DataFileFormat, DataFileWriter, KeptRows } from './types';

/**
 * Parquet data files (docs/decisions/0030), written with hyparquet-writer and read with hyparquet
 * (both pure JavaScript): one row group per 100 000 rows (a roll's file is at most a few of them),
 * zstd pages (node:zlib), statistics on the small columns, none on the two image columns (each
 * value is a whole item: min/max would copy two items into the footer), no bloom filters. An
 * erasure rewrites a file from its kept rows (`encode`), so no statistic, dictionary or page of
 * the new file ever saw an erased row (test/unit/archiver/parquet-erase.test.ts scans for it).
 */

export const PARQUET_ROW_GROUP_ROWS = 100_000;
const ZSTD_LEVEL = 3;

function zstd(input: Uint8Array): Uint8Array {
  return zlib.zstdCompressSync(input, { params: { [zlib.constants.ZSTD_c_compressionLevel]: ZSTD_LEVEL } });
}

function unzstd(input: Uint8Array): Uint8Array {
  return zlib.zstdDecompressSync(input);
}

const SCHEMA_OF: Record<ColumnData['type'], Omit<SchemaElement, 'name' | 'repetition_type'>> = {
  STRING: { type: 'BYTE_ARRAY', converted_type: 'UTF8' },
  // JSON text as a UTF-8 string: every engine's JSON functions take one (DuckDB reads the JSON logical type alone
  // as a BLOB), and hyparquet-writer would re-serialise values of the JSON converted type, where ours are JSON text
  // already, written once and exactly (a number's digits never go through a float).
  JSON: { type: 'BYTE_ARRAY', converted_type: 'UTF8' },
  TIMESTAMP: { type: 'INT64', converted_type: 'TIMESTAMP_MILLIS' },
  INT64: { type: 'INT64' },
  INT32: { type: 'INT32' },
  BOOLEAN: { type: 'BOOLEAN' },
  DOUBLE: { type: 'DOUBLE' },
  BYTE_ARRAY: { type: 'BYTE_ARRAY' },
};

/** The two columns that hold a whole item per row: plain pages, no statistics. */
const IMAGE_COLUMNS = new Set(['old_image', 'item']);

/** The bytes of a Parquet file of these columns. */
export function writeParquet(columns: ColumnData[]): Buffer {
  const schema: SchemaElement[] = [
    { name: 'ttlstream_archive', num_children: columns.length },
    ...columns.map((c): SchemaElement => ({
      name: c.name,
      ...SCHEMA_OF[c.type],
      repetition_type: c.nullable ? 'OPTIONAL' : 'REQUIRED',
    })),
  ];
  const columnData: ColumnSource[] = columns.map((c) => ({
    name: c.name,
    data: c.data,
    nullable: c.nullable,
    ...(IMAGE_COLUMNS.has(c.name) ? { statistics: false, encoding: 'PLAIN' as const } : {}),
  }));
  const out = parquetWriteBuffer({
    columnData,
    schema,
    codec: 'ZSTD',
    compressors: { ZSTD: zstd },
    rowGroupSize: PARQUET_ROW_GROUP_ROWS,
    kvMetadata: [{ key: 'ttlstream.archive', value: 'archived-record columns v1 (docs/archive-columns.md)' }],
    createdBy: 'ttlstream',
  });
  return Buffer.from(out);
}

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

  async finish(context: DataFileContext): Promise<Buffer> {
    const rows: AvroArchivedRecord[] = [];
    for (const { buf, used } of this.chunks) {
      for (let pos = 0; pos < used;) {
        const { value, offset } = archivedRecordType.decode(buf, pos) as {
          value: AvroArchivedRecord;
          offset: number;
        };
        rows.push(value);
        pos = offset;
      }
    }
    this.chunks.length = 0;
    return writeParquet(parquetColumns(rows, context));
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
      userIdentity: { type: p.user_identity_type, principalId: p.principal_id },
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

/** Every row of a Parquet data file, validated; a damaged file is an error naming it, never fewer rows. */
export async function decodeParquet(body: Buffer, path: string): Promise<ArchivedRecord[]> {
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
function columnTypeOf(e: SchemaElement): ColumnType {
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
    writeParquet(parquetColumns(rows.map(toAvroArchived), context)),
  keepRows: keepParquetRows,
};
