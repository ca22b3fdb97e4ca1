import { parquetWriteBuffer, type ColumnSource } from 'hyparquet-writer';
import type { SchemaElement } from 'hyparquet';
import zlib from 'node:zlib';
import type { ColumnData } from './parquet-rows';

/**
 * The bytes of a Parquet data file (docs/decisions/0030), written with hyparquet-writer (pure
 * JavaScript): one row group per 100 000 rows (a roll's file is at most a few of them), zstd pages
 * (node:zlib), statistics on the small columns, none on the two image columns (each value is a
 * whole item: min/max would copy two items into the footer), no bloom filters. Pure: the archiver
 * runs it on its encoding threads (parquet-pool.ts), an erasure in its own thread.
 */

export const PARQUET_ROW_GROUP_ROWS = 100_000;
/** zstd's own default; archive.parquetZstdLevel sets another for the archiver's files. */
export const PARQUET_ZSTD_LEVEL = 3;

/**
 * Pages shorter than this are stored as a raw zstd block instead of going through zstd: it cannot
 * make them smaller (a 5-byte page came out as 14 bytes), and each call to it costs ~25 µs of
 * set-up. Most pages of a roll's small files are that short (a constant column's dictionary and
 * indexes): they were two thirds of its zstd calls.
 */
const RAW_PAGE_BELOW = 64;

/** A zstd frame holding `input` as it is (RFC 8878: single segment, 1-byte content size, one last raw block). */
export function rawZstdFrame(input: Uint8Array): Uint8Array {
  if (input.length > 255) throw new RangeError('a raw zstd frame here holds at most 255 bytes');
  const out = new Uint8Array(9 + input.length);
  const block = (input.length << 3) | 1; // Block_Size, Block_Type 0 (raw), Last_Block
  out.set([0x28, 0xb5, 0x2f, 0xfd, 0x20, input.length, block & 0xff, (block >> 8) & 0xff, block >> 16]);
  out.set(input, 9);
  return out;
}

function zstdAt(level: number): (input: Uint8Array) => Uint8Array {
  const options = { params: { [zlib.constants.ZSTD_c_compressionLevel]: level } };
  return (input) =>
    input.length < RAW_PAGE_BELOW ? rawZstdFrame(input) : zlib.zstdCompressSync(input, options);
}

export function unzstd(input: Uint8Array): Uint8Array {
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
export function writeParquet(columns: ColumnData[], zstdLevel = PARQUET_ZSTD_LEVEL): Buffer {
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
    compressors: { ZSTD: zstdAt(zstdLevel) },
    rowGroupSize: PARQUET_ROW_GROUP_ROWS,
    kvMetadata: [{ key: 'ttlstream.archive', value: 'archived-record columns v1 (docs/archive-columns.md)' }],
    createdBy: 'ttlstream',
  });
  return Buffer.from(out);
}
