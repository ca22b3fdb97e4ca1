import type { RowGroup, SchemaElement } from 'hyparquet';
import { ByteWriter } from 'hyparquet-writer/src/bytewriter.js';
import { writeIndexes } from 'hyparquet-writer/src/indexes.js';
import { writeMetadata } from 'hyparquet-writer/src/metadata.js';
import zlib from 'node:zlib';
import { InternalError } from '../../core/errors';
import { FileParts, writeColumnChunk, type WrittenChunk } from './parquet-chunk';
import type { ColumnData } from './parquet-rows';

/**
 * The bytes of a Parquet data file (docs/decisions/0031), written for the archive's flat
 * columns: one row group per 100 000 rows (a roll's file is at most a few of them), plain pages
 * written straight from the column values and zstd-compressed once each (node:zlib;
 * parquet-chunk.ts), statistics on the small columns, none on the two image columns (each value is
 * a whole item: min/max would copy two items into the footer), no bloom filters. The Thrift of the
 * page headers, offset indexes and footer is hyparquet-writer's. Pure: the archiver runs it on its
 * encoding threads (parquet-pool.ts), an erasure in its own thread.
 */

export const PARQUET_ROW_GROUP_ROWS = 100_000;
/** zstd's own default; archive.parquetZstdLevel sets another for the archiver's files. */
export const PARQUET_ZSTD_LEVEL = 3;

/**
 * Pages shorter than this are stored as a raw zstd block instead of going through zstd: it cannot
 * make them smaller (a 5-byte page came out as 14 bytes), and each call to it costs ~25 µs of
 * set-up. Most pages of a roll's small files are that short (the dictionary and index pages of a
 * column that holds one value).
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

/** node:zlib's output chunk (16 KiB unless told): a small page's output fits one of its own size, allocated for it. */
const ZSTD_CHUNK_BYTES = 16 * 1024;

function zstdAt(level: number): (input: Uint8Array) => Uint8Array {
  const params = { [zlib.constants.ZSTD_c_compressionLevel]: level };
  // Sized to the page, a small page's call costs ~5 µs less (of ~25): most of a small file's zstd calls.
  return (input) =>
    input.length < RAW_PAGE_BELOW
      ? rawZstdFrame(input)
      : zlib.zstdCompressSync(input, { params, chunkSize: Math.min(ZSTD_CHUNK_BYTES, input.length + 64) });
}

/**
 * A page's bytes decompressed. Given the page's size (its header says it), a small page's output goes to a buffer of
 * that size (one more byte: zlib then sees the frame end without a second buffer) instead of node:zlib's 16 KiB
 * chunk: most pages of a roll's file are a few bytes, and each 16 KiB chunk was garbage to collect.
 */
export function unzstd(input: Uint8Array, outputLength?: number): Uint8Array {
  if (outputLength === undefined || outputLength >= ZSTD_CHUNK_BYTES) return zlib.zstdDecompressSync(input);
  return zlib.zstdDecompressSync(input, { chunkSize: Math.max(64, outputLength + 1) });
}

const SCHEMA_OF: Record<ColumnData['type'], Omit<SchemaElement, 'name' | 'repetition_type'>> = {
  STRING: { type: 'BYTE_ARRAY', converted_type: 'UTF8' },
  // JSON text as a UTF-8 string: every engine's JSON functions take one (DuckDB reads the JSON logical type alone
  // as a BLOB). The text is written once and exactly (a number's digits never go through a float).
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

const PAR1 = Buffer.from('PAR1', 'latin1');

/** The file's row groups: PARQUET_ROW_GROUP_ROWS rows each (the last one fewer); a file of no rows has none. */
function writeRowGroups(
  file: FileParts,
  columns: ColumnData[],
  zstdLevel: number,
): { groups: RowGroup[]; chunks: WrittenChunk[] } {
  const rows = columns[0]?.data.length ?? 0;
  for (const c of columns)
    if (c.data.length !== rows)
      throw new InternalError(`Parquet column ${c.name} has ${c.data.length} rows, not ${rows}`);
  const compress = zstdAt(zstdLevel);
  const groups: RowGroup[] = [];
  const chunks: WrittenChunk[] = [];
  for (let from = 0; from < rows; from += PARQUET_ROW_GROUP_ROWS) {
    const to = Math.min(rows, from + PARQUET_ROW_GROUP_ROWS);
    const start = file.size;
    const written = columns.map((c) =>
      writeColumnChunk(file, c, from, to, { statistics: !IMAGE_COLUMNS.has(c.name), compress }),
    );
    chunks.push(...written);
    groups.push({
      columns: written.map((w) => w.chunk),
      total_byte_size: written.reduce(
        (sum, w) => sum + (w.chunk.meta_data?.total_uncompressed_size ?? 0n),
        0n,
      ),
      num_rows: BigInt(to - from),
      total_compressed_size: BigInt(file.size - start),
    });
  }
  return { groups, chunks };
}

/**
 * The bytes of a Parquet file of these columns: PAR1, the row groups' column chunks
 * (parquet-chunk.ts), the offset indexes of chunks of more than one page, the footer (FileMetaData
 * in Thrift, by hyparquet-writer), its length, PAR1.
 */
export function writeParquet(columns: ColumnData[], zstdLevel = PARQUET_ZSTD_LEVEL): Buffer {
  const schema: SchemaElement[] = [
    { name: 'ttlstream_archive', num_children: columns.length },
    ...columns.map((c): SchemaElement => ({
      name: c.name,
      ...SCHEMA_OF[c.type],
      repetition_type: c.nullable ? 'OPTIONAL' : 'REQUIRED',
    })),
  ];
  const file = new FileParts();
  file.push(PAR1);
  const { groups, chunks } = writeRowGroups(file, columns, zstdLevel);
  const tail = new ByteWriter(4096);
  tail.offset = file.size; // offsets in the file, where the tail starts
  writeIndexes(tail, chunks);
  writeMetadata(tail, {
    version: 2,
    created_by: 'ttlstream',
    schema,
    num_rows: groups.reduce((sum, g) => sum + g.num_rows, 0n),
    row_groups: groups,
    key_value_metadata: [
      { key: 'ttlstream.archive', value: 'archived-record columns v1 (docs/archive-columns.md)' },
    ],
  });
  tail.appendBytes(PAR1);
  file.push(tail.getBytes());
  return file.bytes();
}
