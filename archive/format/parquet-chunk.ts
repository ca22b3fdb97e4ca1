import type { ColumnChunk, ColumnMetaData, Encoding, OffsetIndex, PageHeader, ParquetType } from 'hyparquet';
import { ByteWriter } from 'hyparquet-writer/src/bytewriter.js';
import { writePageHeader } from 'hyparquet-writer/src/datapage.js';
import { writeRleBitPackedHybrid } from 'hyparquet-writer/src/encoding.js';
import { InternalError } from '../../core/errors';
import type { ColumnData, ColumnType, ColumnValue } from './parquet-rows';
import { ColumnBounds } from './parquet-stats';
import { PageValues } from './parquet-values';

/**
 * One column chunk of a flat (unnested) column: data pages v2 of PLAIN values, cut at about
 * 1 MiB of values, each page's values compressed once; an OPTIONAL column's definition levels
 * (RLE/bit-packed, bit width 1) before them, uncompressed as v2 has it. A column that holds one
 * value (a file's table, topic, region, ...) is a dictionary of that value and one run of index 0:
 * two pages too small to compress, where its plain values would need a zstd call of their own.
 * No bloom filters, no column index; an offset index when the chunk has more than one page.
 */

/** The bytes of a file as it is written: its parts, copied once into the file at the end. */
export class FileParts {
  private readonly parts: Uint8Array[] = [];
  size = 0;

  push(bytes: Uint8Array): void {
    this.parts.push(bytes);
    this.size += bytes.length;
  }

  /** The file, in one ArrayBuffer of its own (the encoding thread moves it without a copy). */
  bytes(): Buffer {
    const out = Buffer.allocUnsafeSlow(this.size);
    let at = 0;
    for (const p of this.parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
}

export interface ChunkOptions {
  /** Statistics in the footer (not on the image columns: each value is a whole item). */
  statistics: boolean;
  /** A page's values, compressed with the file's codec (ZSTD). */
  compress: (values: Uint8Array) => Uint8Array;
}

export interface WrittenChunk {
  chunk: ColumnChunk;
  offsetIndex?: OffsetIndex;
}

/** Values per page: pages are cut once this many bytes of values are written (hyparquet-writer's default page size). */
const PAGE_BYTES = 1024 * 1024;

const PHYSICAL: Record<ColumnType, ParquetType> = {
  STRING: 'BYTE_ARRAY',
  JSON: 'BYTE_ARRAY',
  BYTE_ARRAY: 'BYTE_ARRAY',
  TIMESTAMP: 'INT64',
  INT64: 'INT64',
  INT32: 'INT32',
  DOUBLE: 'DOUBLE',
  BOOLEAN: 'BOOLEAN',
};

// One page's values and levels at a time: reused page after page, file after file (an encoding thread writes one
// file at a time).
const values = new PageValues();
let levels = new Uint8Array(1024);

function putterOf(type: ParquetType): (v: ColumnValue) => void {
  if (type === 'BYTE_ARRAY') return (v) => values.byteArray(v);
  if (type === 'INT64') return (v) => values.int64(v);
  if (type === 'INT32') return (v) => values.int32(v);
  if (type === 'DOUBLE') return (v) => values.double(v);
  return (v) => values.boolean(v);
}

/** The one value of rows [from, to) of `data` that are not null, if they hold one and only one. */
function onlyValue(data: ColumnValue[], from: number, to: number): ColumnValue {
  let only: ColumnValue = null;
  for (let i = from; i < to; i++) {
    const v = data[i] ?? null;
    if (v === null) continue;
    if (only === null) only = v;
    // -0 and 0 are equal, but not the same value to read back.
    else if (v !== only || (v === 0 && !Object.is(v, only))) return null;
  }
  return only;
}

/** A run of `count` equal values of bit width ≤ 8 (RLE/bit-packed hybrid: a varint header, one byte). */
function rleRun(count: number, value: number): Uint8Array {
  const header = new ByteWriter(8);
  header.appendVarInt(count << 1);
  header.appendUint8(value);
  return header.getBytes();
}

/** The definition levels of a page of `count` rows, `nulls` of them null (levels[i]: 1 set, 0 null). */
function definitionLevels(count: number, nulls: number): Uint8Array {
  if (nulls === 0 || nulls === count) return rleRun(count, nulls === 0 ? 1 : 0);
  const out = new ByteWriter(Math.ceil(count / 8) + 16);
  writeRleBitPackedHybrid(out, levels.subarray(0, count), 1);
  return out.getBytes();
}

interface PageBody {
  /** Rows in the page (its values, null ones included). */
  rows: number;
  nulls: number;
  /** Definition levels, empty for a REQUIRED column. */
  levels: Uint8Array;
  values: Uint8Array;
  encoding: Encoding;
}

/**
 * Writes a page: its header, `prefix` (a data page v2's levels: never compressed) and its values compressed; returns
 * its uncompressed size, header included (as footers count it).
 */
function writePage(
  file: FileParts,
  header: Omit<PageHeader, 'compressed_page_size' | 'uncompressed_page_size'>,
  body: Uint8Array,
  prefix: Uint8Array,
  compress: ChunkOptions['compress'],
): number {
  const compressed = compress(body);
  const headerBytes = new ByteWriter(64);
  writePageHeader(headerBytes, {
    ...header,
    uncompressed_page_size: prefix.length + body.length,
    compressed_page_size: prefix.length + compressed.length,
  });
  file.push(headerBytes.getBytes());
  if (prefix.length > 0) file.push(prefix);
  file.push(compressed);
  return headerBytes.offset + prefix.length + body.length;
}

function writeDataPage(file: FileParts, page: PageBody, compress: ChunkOptions['compress']): number {
  return writePage(
    file,
    {
      type: 'DATA_PAGE_V2',
      data_page_header_v2: {
        num_values: page.rows,
        num_nulls: page.nulls,
        num_rows: page.rows,
        encoding: page.encoding,
        definition_levels_byte_length: page.levels.length,
        repetition_levels_byte_length: 0,
        is_compressed: true,
      },
    },
    page.values,
    page.levels,
    compress,
  );
}

type PageEncodingStats = NonNullable<ColumnMetaData['encoding_stats']>[number];
type PageLocation = OffsetIndex['page_locations'][number];

/** What a chunk's pages were, for its footer entry. */
interface ChunkPages {
  start: number;
  dictionaryAt?: number;
  dataPageAt: number;
  /** Uncompressed bytes, page headers included (as footers count them). */
  uncompressed: number;
  nulls: number;
  /** The data pages, for the offset index. */
  locations: PageLocation[];
  encodings: Encoding[];
  encodingStats: PageEncodingStats[];
}

function growLevels(rows: number): void {
  if (levels.length < rows) levels = new Uint8Array(rows);
}

/** Rows [from, to) of a column as plain pages of about PAGE_BYTES of values each. */
function writePlainPages(
  file: FileParts,
  column: ColumnData,
  from: number,
  to: number,
  options: ChunkOptions,
  bounds: ColumnBounds | null,
): ChunkPages {
  const put = putterOf(PHYSICAL[column.type]);
  const data = column.data;
  const start = file.size;
  const locations: PageLocation[] = [];
  let uncompressed = 0;
  let nullsInChunk = 0;
  growLevels(to - from);
  for (let row = from; row < to;) {
    const first = row;
    let nulls = 0;
    values.reset();
    for (; row < to && values.at < PAGE_BYTES; row++) {
      const v = data[row] ?? null;
      levels[row - first] = v === null ? 0 : 1;
      if (v === null) nulls += 1;
      else {
        put(v);
        bounds?.add(v);
      }
    }
    if (nulls > 0 && !column.nullable)
      throw new InternalError(`a null in the REQUIRED column ${column.name}`);
    const at = file.size;
    const rows = row - first;
    const pageLevels = column.nullable ? definitionLevels(rows, nulls) : new Uint8Array(0);
    const page = { rows, nulls, levels: pageLevels, values: values.view(), encoding: 'PLAIN' as const };
    uncompressed += writeDataPage(file, page, options.compress);
    nullsInChunk += nulls;
    locations.push({
      offset: BigInt(at),
      compressed_page_size: file.size - at,
      first_row_index: BigInt(first - from),
    });
  }
  return {
    start,
    dataPageAt: start,
    uncompressed,
    nulls: nullsInChunk,
    locations,
    encodings: ['PLAIN'],
    encodingStats: [{ page_type: 'DATA_PAGE_V2', encoding: 'PLAIN', count: locations.length }],
  };
}

/** Rows [from, to) of a column whose values are all `only` or null: a dictionary page of it, one data page of index 0. */
function writeOneValue(
  file: FileParts,
  column: ColumnData,
  from: number,
  to: number,
  only: NonNullable<ColumnValue>,
  options: ChunkOptions,
): ChunkPages {
  const start = file.size;
  values.reset();
  putterOf(PHYSICAL[column.type])(only);
  const dictionaryHeader = {
    type: 'DICTIONARY_PAGE' as const,
    dictionary_page_header: { num_values: 1, encoding: 'PLAIN' as const },
  };
  let uncompressed = writePage(file, dictionaryHeader, values.view(), new Uint8Array(0), options.compress);
  growLevels(to - from);
  let nulls = 0;
  for (let i = from; i < to; i++) {
    const isNull = (column.data[i] ?? null) === null;
    levels[i - from] = isNull ? 0 : 1;
    if (isNull) nulls += 1;
  }
  if (nulls > 0 && !column.nullable) throw new InternalError(`a null in the REQUIRED column ${column.name}`);
  // RLE_DICTIONARY values: the indexes' bit width (1: what every reader takes), then one run of index 0.
  const run = rleRun(to - from - nulls, 0);
  const indexes = new Uint8Array(1 + run.length);
  indexes[0] = 1;
  indexes.set(run, 1);
  const rows = to - from;
  const pageLevels = column.nullable ? definitionLevels(rows, nulls) : new Uint8Array(0);
  const dataPageAt = file.size;
  const page = { rows, nulls, levels: pageLevels, values: indexes, encoding: 'RLE_DICTIONARY' as const };
  uncompressed += writeDataPage(file, page, options.compress);
  return {
    start,
    dictionaryAt: start,
    dataPageAt,
    uncompressed,
    nulls,
    locations: [
      { offset: BigInt(dataPageAt), compressed_page_size: file.size - dataPageAt, first_row_index: 0n },
    ],
    encodings: ['PLAIN', 'RLE_DICTIONARY'],
    encodingStats: [
      { page_type: 'DICTIONARY_PAGE', encoding: 'PLAIN', count: 1 },
      { page_type: 'DATA_PAGE_V2', encoding: 'RLE_DICTIONARY', count: 1 },
    ],
  };
}

/** Rows [from, to) of a column as one column chunk of a row group, and its footer entry. */
export function writeColumnChunk(
  file: FileParts,
  column: ColumnData,
  from: number,
  to: number,
  options: ChunkOptions,
): WrittenChunk {
  const bounds = options.statistics ? new ColumnBounds(column.type) : null;
  // One value: bit-packed booleans are small already, and the image columns (no statistics) never repeat one.
  const only = bounds && column.type !== 'BOOLEAN' ? onlyValue(column.data, from, to) : null;
  if (only !== null) bounds?.add(only);
  const pages =
    only === null
      ? writePlainPages(file, column, from, to, options, bounds)
      : writeOneValue(file, column, from, to, only, options);
  const chunk: ColumnChunk = {
    file_offset: BigInt(pages.start),
    meta_data: {
      type: PHYSICAL[column.type],
      encodings: pages.encodings,
      path_in_schema: [column.name],
      codec: 'ZSTD',
      num_values: BigInt(to - from),
      total_uncompressed_size: BigInt(pages.uncompressed),
      total_compressed_size: BigInt(file.size - pages.start),
      data_page_offset: BigInt(pages.dataPageAt),
      ...(pages.dictionaryAt === undefined ? {} : { dictionary_page_offset: BigInt(pages.dictionaryAt) }),
      ...(bounds ? { statistics: bounds.statistics(pages.nulls), encoding_stats: pages.encodingStats } : {}),
    },
  };
  return pages.locations.length > 1 ? { chunk, offsetIndex: { page_locations: pages.locations } } : { chunk };
}
