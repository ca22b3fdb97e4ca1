import { parquetMetadata, parquetReadObjects, type FileMetaData } from 'hyparquet';
import { parquetHeader } from 'hyparquet/src/column.js';
import zlib from 'node:zlib';
import type { ColumnData, ColumnType, ColumnValue } from '../../../../archive/format/parquet-rows';
import {
  PARQUET_ROW_GROUP_ROWS,
  rawZstdFrame,
  unzstd as decompress,
  writeParquet,
} from '../../../../archive/format/parquet-write';

/**
 * The archive's own Parquet writer (parquet-write.ts, parquet-chunk.ts): files of every column
 * type read back by hyparquet as they were written, with the footer's statistics over exactly the
 * values written, none on the image columns.
 */

const arrayBufferOf = (body: Buffer): ArrayBuffer =>
  body.buffer.slice(body.byteOffset, body.byteOffset + body.length) as ArrayBuffer;

const unzstd = (input: Uint8Array): Uint8Array => zlib.zstdDecompressSync(input);

async function readBack(body: Buffer, rows?: { rowStart: number; rowEnd: number }) {
  return (await parquetReadObjects({
    file: arrayBufferOf(body),
    compressors: { ZSTD: unzstd },
    utf8: false,
    parsers: {
      timestampFromMilliseconds: (ms: bigint) => ms,
      stringFromBytes: (bytes: Uint8Array) => Buffer.from(bytes).toString('utf8'),
    },
    ...rows,
  })) as Array<Record<string, unknown>>;
}

function column(name: string, type: ColumnType, data: ColumnValue[], nullable = true): ColumnData {
  return { name, type, nullable, data };
}

const bytes = (...b: number[]): Uint8Array => Uint8Array.from(b);
const utf8 = (s: string): Uint8Array => Buffer.from(s, 'utf8');

/** Six rows of every column type, nulls in the OPTIONAL ones, edge values throughout. */
function everyType(): ColumnData[] {
  return [
    column('s', 'STRING', ['b', '', 'héllo \u2028', 'a', '\u{1F600} astral', '\uE000 private'], false),
    column('s_null', 'STRING', [null, 'x', null, 'y', 'x', null]),
    column('none', 'STRING', [null, null, null, null, null, null]),
    column('json', 'JSON', [utf8('{"a":1}'), null, utf8('[]'), utf8('"é"'), null, utf8('null')]),
    column('ts', 'TIMESTAMP', [1_700_000_000_000, -1, 0, 8_640_000_000_000_000, null, 1], true),
    column('ts_big', 'TIMESTAMP', [5n, 4n, 3n, 2n, 1n, -(2n ** 40n)], false),
    column('i64', 'INT64', [0n, -(2n ** 63n), 2n ** 63n - 1n, null, 42n, -1n]),
    column('i32', 'INT32', [0, -(2 ** 31), 2 ** 31 - 1, 7, null, -7]),
    column('flag', 'BOOLEAN', [true, false, null, true, true, false]),
    column('flag_req', 'BOOLEAN', [false, false, false, false, false, true], false),
    column('d', 'DOUBLE', [1.5, -0, 0, Number.NaN, -1e300, null]),
    column('bin', 'BYTE_ARRAY', [bytes(0, 255), bytes(), null, bytes(255), bytes(0), bytes(1, 2, 3)]),
    column('old_image', 'JSON', [utf8('{"x":{"S":"1"}}'), null, utf8('{}'), utf8('{}'), utf8('{}'), null]),
  ];
}

/** A column's values as read back (timestamps as bigint ms, strings as strings), binaries as hex to compare. */
function expected(c: ColumnData, v: ColumnValue): unknown {
  if (v === null) return null;
  if (c.type === 'TIMESTAMP') return BigInt(v as number | bigint);
  if (c.type === 'JSON') return Buffer.from(v as Uint8Array).toString('utf8');
  if (v instanceof Uint8Array) return Buffer.from(v).toString('hex');
  return v;
}

/** The rows read are rows [from, …) of the columns, column by column (one comparison each: files of 200 000 rows). */
function expectSameRows(read: Array<Record<string, unknown>>, columns: ColumnData[], from = 0): void {
  const rows = columns[0]?.data.length ?? 0;
  expect(read).toHaveLength(rows - from);
  for (const c of columns) {
    const got = read.map((row) => {
      const v = row[c.name];
      return v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v;
    });
    expect(got).toEqual(c.data.slice(from).map((v) => expected(c, v)));
  }
}

/** Each page of a file: its column, header and the compressed bytes after its levels. */
function pagesOf(body: Buffer, meta: FileMetaData) {
  const view = new DataView(arrayBufferOf(body));
  const out: Array<{ column: string; header: ReturnType<typeof parquetHeader>; data: Buffer }> = [];
  for (const group of meta.row_groups)
    for (const chunk of group.columns) {
      const m = chunk.meta_data;
      if (!m) throw new Error('no column metadata');
      const start = Number(m.dictionary_page_offset ?? m.data_page_offset);
      const reader = { view, offset: start };
      while (reader.offset < start + Number(m.total_compressed_size)) {
        const header = parquetHeader(reader);
        const v2 = header.data_page_header_v2;
        const levels = v2 ? v2.definition_levels_byte_length + v2.repetition_levels_byte_length : 0;
        const data = body.subarray(reader.offset + levels, reader.offset + header.compressed_page_size);
        out.push({ column: m.path_in_schema.join('.'), header, data });
        reader.offset += header.compressed_page_size;
      }
    }
  return out;
}

function statisticsOf(meta: FileMetaData, name: string) {
  const chunk = meta.row_groups[0]?.columns.find((c) => c.meta_data?.path_in_schema[0] === name);
  return chunk?.meta_data?.statistics;
}

describe('the Parquet writer', () => {
  it('writes every column type, nulls included, and reads back as written', async () => {
    const columns = everyType();
    const body = writeParquet(columns);
    expectSameRows(await readBack(body), columns);
    const meta = parquetMetadata(arrayBufferOf(body));
    expect(meta.num_rows).toBe(6n);
    expect(meta.created_by).toBe('ttlstream');
    expect(meta.key_value_metadata?.map((kv) => kv.key)).toEqual(['ttlstream.archive']);
    expect(meta.schema.slice(1).map((e) => [e.name, e.type, e.converted_type, e.repetition_type])).toEqual([
      ['s', 'BYTE_ARRAY', 'UTF8', 'REQUIRED'],
      ['s_null', 'BYTE_ARRAY', 'UTF8', 'OPTIONAL'],
      ['none', 'BYTE_ARRAY', 'UTF8', 'OPTIONAL'],
      ['json', 'BYTE_ARRAY', 'UTF8', 'OPTIONAL'],
      ['ts', 'INT64', 'TIMESTAMP_MILLIS', 'OPTIONAL'],
      ['ts_big', 'INT64', 'TIMESTAMP_MILLIS', 'REQUIRED'],
      ['i64', 'INT64', undefined, 'OPTIONAL'],
      ['i32', 'INT32', undefined, 'OPTIONAL'],
      ['flag', 'BOOLEAN', undefined, 'OPTIONAL'],
      ['flag_req', 'BOOLEAN', undefined, 'REQUIRED'],
      ['d', 'DOUBLE', undefined, 'OPTIONAL'],
      ['bin', 'BYTE_ARRAY', undefined, 'OPTIONAL'],
      ['old_image', 'BYTE_ARRAY', 'UTF8', 'OPTIONAL'],
    ]);
    expect(meta.row_groups[0]?.columns.every((c) => c.meta_data?.codec === 'ZSTD')).toBe(true);
  });

  it('keeps statistics over the values written, none for the image columns', () => {
    const meta = parquetMetadata(arrayBufferOf(writeParquet(everyType())));
    // Strings in UTF-8 byte order: an astral character sorts after U+E000, where UTF-16 puts it before.
    expect(statisticsOf(meta, 's')).toMatchObject({
      min_value: '',
      max_value: '\u{1F600} astral',
      null_count: 0n,
    });
    expect(statisticsOf(meta, 's_null')).toMatchObject({ min_value: 'x', max_value: 'y', null_count: 3n });
    expect(statisticsOf(meta, 'none')).toEqual({ null_count: 6n });
    expect(statisticsOf(meta, 'json')).toMatchObject({
      min_value: '"é"',
      max_value: '{"a":1}',
      null_count: 2n,
    });
    expect(statisticsOf(meta, 'ts')).toMatchObject({
      min_value: new Date(-1),
      max_value: new Date(8_640_000_000_000_000),
      null_count: 1n,
    });
    expect(statisticsOf(meta, 'i64')).toMatchObject({ min_value: -(2n ** 63n), max_value: 2n ** 63n - 1n });
    expect(statisticsOf(meta, 'i32')).toMatchObject({ min_value: -(2 ** 31), max_value: 2 ** 31 - 1 });
    expect(statisticsOf(meta, 'flag')).toMatchObject({ min_value: false, max_value: true, null_count: 1n });
    // NaN is no bound; one zero, -0 as min.
    const d = statisticsOf(meta, 'd');
    expect(d).toMatchObject({ min_value: -1e300, max_value: 1.5, null_count: 1n });
    const raw = parquetMetadata(arrayBufferOf(writeParquet(everyType())), {
      parsers: { stringFromBytes: (b: Uint8Array) => Buffer.from(b).toString('hex') },
    });
    expect(statisticsOf(raw, 'bin')).toMatchObject({ min_value: '', max_value: 'ff', null_count: 1n });
    expect(statisticsOf(meta, 'old_image')).toBeUndefined();
  });

  it('gives a zero its sign in the statistics: min -0, max +0', () => {
    const meta = parquetMetadata(arrayBufferOf(writeParquet([column('d', 'DOUBLE', [0, -0, 0])])));
    const stats = statisticsOf(meta, 'd');
    expect(Object.is(stats?.min_value, -0)).toBe(true);
    expect(Object.is(stats?.max_value, 0)).toBe(true);
  });

  it('reads the same bounds from strings and from their bytes (an erasure rewrites from bytes)', () => {
    const text = ['m', 'z\u{1F600}', '\uFFFD', 'a'];
    const fromText = parquetMetadata(arrayBufferOf(writeParquet([column('s', 'STRING', text)])));
    const fromBytes = parquetMetadata(arrayBufferOf(writeParquet([column('s', 'STRING', text.map(utf8))])));
    expect(statisticsOf(fromBytes, 's')).toEqual(statisticsOf(fromText, 's'));
    expect(statisticsOf(fromText, 's')).toMatchObject({ min_value: 'a', max_value: '\uFFFD' });
  });

  it('writes a file of no rows: no row group, readable', async () => {
    const body = writeParquet(everyType().map((c) => ({ ...c, data: [] })));
    const meta = parquetMetadata(arrayBufferOf(body));
    expect(meta.num_rows).toBe(0n);
    expect(meta.row_groups).toEqual([]);
    expect(meta.schema).toHaveLength(14);
    expect(await readBack(body)).toEqual([]);
  });

  it('cuts a column into pages of about 1 MiB of values, with an offset index to find them', async () => {
    const rows = 2500;
    const columns = [
      column(
        'n',
        'INT64',
        Array.from({ length: rows }, (_, i) => BigInt(i)),
        false,
      ),
      column(
        'item',
        'JSON',
        Array.from({ length: rows }, (_, i) =>
          i % 7 === 3 ? null : utf8(`{"i":${i},"p":"${'x'.repeat(1000)}"}`),
        ),
      ),
    ];
    const body = writeParquet(columns);
    const meta = parquetMetadata(arrayBufferOf(body));
    const pages = pagesOf(body, meta).filter((p) => p.column === 'item');
    expect(pages).toHaveLength(3);
    // Each page but the last is cut at the first value that takes it to 1 MiB.
    const sizes = pages.map((p) => unzstd(p.data).length);
    for (const size of sizes.slice(0, -1)) expect(size - 1024 * 1024).toBeGreaterThanOrEqual(0);
    for (const size of sizes.slice(0, -1)) expect(size - 1024 * 1024).toBeLessThan(1100);
    expect(sizes.at(-1)).toBeLessThan(1024 * 1024);
    expect(pages.reduce((sum, p) => sum + (p.header.data_page_header_v2?.num_nulls ?? 0), 0)).toBe(357);
    const item = meta.row_groups[0]?.columns[1];
    expect(item?.offset_index_offset).toBeDefined();
    expect(meta.row_groups[0]?.columns[0]?.offset_index_offset).toBeUndefined(); // one page
    expectSameRows(await readBack(body), columns);
    // A range of rows across a page boundary, read through the offset index.
    expectSameRows(
      await readBack(body, { rowStart: 1000, rowEnd: 1100 }),
      columns.map((c) => ({ ...c, data: c.data.slice(0, 1100) })),
      1000,
    );
  });

  it(`starts a row group every ${PARQUET_ROW_GROUP_ROWS} rows`, async () => {
    const rows = PARQUET_ROW_GROUP_ROWS * 2 + 3;
    const columns = [
      column(
        'n',
        'INT32',
        Array.from({ length: rows }, (_, i) => i),
        false,
      ),
      column(
        'odd',
        'STRING',
        Array.from({ length: rows }, (_, i) => (i % 2 ? `o${i}` : null)),
      ),
    ];
    const body = writeParquet(columns);
    const meta = parquetMetadata(arrayBufferOf(body));
    expect(meta.row_groups.map((g) => g.num_rows)).toEqual([100_000n, 100_000n, 3n]);
    // Each group's statistics are its own rows'.
    expect(meta.row_groups.map((g) => g.columns[0]?.meta_data?.statistics?.max_value)).toEqual([
      99_999, 199_999, 200_002,
    ]);
    expect(meta.row_groups.map((g) => g.columns[1]?.meta_data?.statistics?.null_count)).toEqual([
      50_000n,
      50_000n,
      2n,
    ]);
    expectSameRows(await readBack(body), columns);
  });

  it('writes a column of one value as a dictionary of it, and pages too small for zstd as raw zstd frames', async () => {
    const columns = [
      column('topic', 'STRING', ['t', 't', null, 't'], true),
      column('partition', 'INT32', [3, 3, 3, 3], false),
      column('d', 'DOUBLE', [0, -0, 0, 0], false), // -0 is not 0 to read back: no dictionary
      column('n', 'INT64', [1n, 2n, 3n, 4n], false),
    ];
    const body = writeParquet(columns);
    const meta = parquetMetadata(arrayBufferOf(body));
    expect(meta.row_groups[0]?.columns.map((c) => c.meta_data?.encodings)).toEqual([
      ['PLAIN', 'RLE_DICTIONARY'],
      ['PLAIN', 'RLE_DICTIONARY'],
      ['PLAIN'],
      ['PLAIN'],
    ]);
    for (const page of pagesOf(body, meta)) {
      // Magic, single segment, a 1-byte content size, then one last raw block.
      expect([...page.data.subarray(0, 5)]).toEqual([0x28, 0xb5, 0x2f, 0xfd, 0x20]);
      expect((page.data[6] as number) & 0x07).toBe(1);
    }
    expectSameRows(await readBack(body), columns);
    expect(Object.is((await readBack(body))[1]?.d, -0)).toBe(true);
  });
});

describe('the Parquet writer, given columns it cannot write', () => {
  it('refuses a null in a REQUIRED column and a value of another type, naming the column type', () => {
    expect(() => writeParquet([column('s', 'STRING', ['a', null], false)])).toThrow(
      /null in the REQUIRED column s/,
    );
    expect(() => writeParquet([column('n', 'INT32', [2 ** 31])])).toThrow(/in an INT32 column/);
    expect(() => writeParquet([column('n', 'INT64', [1.5])])).toThrow(/in an INT64 column/);
    expect(() => writeParquet([column('b', 'BOOLEAN', [1])])).toThrow(/in a BOOLEAN column/);
    expect(() => writeParquet([column('a', 'INT32', [1]), column('b', 'INT32', [])])).toThrow(
      /column b has 0 rows/,
    );
  });
});

describe('unzstd: a page decompressed into a buffer of its size', () => {
  it.each([0, 1, 63, 64, 5_000, 16_383, 16_384, 100_000])('gives back the %i bytes compressed', (n) => {
    const page = Buffer.from(Array.from({ length: n }, (_, i) => (i * 7919) % 251));
    const frame = n < 256 ? rawZstdFrame(page) : zlib.zstdCompressSync(page);
    expect(Buffer.from(decompress(frame, n))).toEqual(page);
    expect(Buffer.from(decompress(frame))).toEqual(page);
  });

  it('a page whose header says fewer bytes than its frame holds comes back whole (hyparquet then refuses it)', () => {
    const page = Buffer.alloc(1000, 7);
    expect(decompress(zlib.zstdCompressSync(page), 10)).toHaveLength(1000);
  });
});
