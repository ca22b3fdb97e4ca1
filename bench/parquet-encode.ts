/**
 * The Parquet archive's encoding CPU per row beside deflating the same rows' Avro bytes, in one run, no service
 * (`bash bench/run.sh parquet-encode [-- --rows 30000 --files-of 150,1200,5000 --rounds 5]`).
 *
 * Builds `--rows` archive rows of the archiver bench's records (bench/records.ts: ~1.2 KB, an 800-byte payload of
 * varied words) as the archiver keeps them (their Avro archive-row bytes), a table's rows to a file, and for each
 * file size in `--files-of` (rows per file), `--rounds` times:
 *   1. parquet: each file encoded as an encoding thread does (`encodeRowChunks`), CPU per row; then its two halves
 *      timed file by file: rows → columns (the rows' bytes walked into columns, parquet-walk.ts, parquet-rows.ts)
 *      and columns → file (`writeParquet`: pages, zstd, footer);
 *   2. the raw limit: each file's Avro bytes deflated in the Avro archiver's blocks at its level (`--deflate-level`,
 *      archive.avroDeflateLevel's default 4), which an Avro archiver pays for the same rows.
 * Prints the best and median round of each, parquet ÷ deflate CPU, and bytes per row; then one JSON line.
 * On one thread: the archiver runs the same work on its encoding threads (parquet-pool.ts) and libuv's pool.
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import zlib from 'node:zlib';
import { DATA_BLOCK_BYTES } from '../archive/format';
import { encodeRowChunks } from '../archive/format/parquet-encode';
import { parquetColumns, ttlAttributes, type ColumnData } from '../archive/format/parquet-rows';
import { walkRowChunks } from '../archive/format/parquet-walk';
import { writeParquet } from '../archive/format/parquet-write';
import { prepareRow, rowBuffer } from '../archive/rows';
import type { TableTtlSettings } from '../policy/settings';
import { toArchived } from '../schemas';
import { benchRecord } from './records';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '30000' },
    'files-of': { type: 'string', default: '150,1200,5000' },
    rounds: { type: 'string', default: '5' },
    'zstd-level': { type: 'string', default: '3' },
    'deflate-level': { type: 'string', default: '4' },
    'payload-bytes': { type: 'string', default: '800' },
  },
});
const ROWS = Number(values.rows);
const FILES_OF = (values['files-of'] ?? '').split(',').map(Number);
const ROUNDS = Number(values.rounds);
const ZSTD_LEVEL = Number(values['zstd-level']);
const DEFLATE_LEVEL = Number(values['deflate-level']);
const PAYLOAD_BYTES = Number(values['payload-bytes']);
const TTL: TableTtlSettings = { policy: { mode: 'dynamodb', attributeName: 'expiresAt' } };

/** Each table's rows as Avro archive-row bytes, in offset order (a file holds one table's rows, as the archiver's). */
function tableRows(): Buffer[][] {
  const base = Math.floor(Date.UTC(2026, 0, 1) / 1000);
  const byTable = new Map<string, Buffer[]>();
  for (let j = 0; j < ROWS; j++) {
    const { table, record } = benchRecord(j, base + (j % 7200), PAYLOAD_BYTES, 'words');
    const row = toArchived(
      { kind: 'remove', record },
      { topic: 'ttlstream.remove', partition: 0, offset: String(j), timestamp: String(base * 1000 + j) },
    );
    const rows = byTable.get(table) ?? [];
    rows.push(rowBuffer(prepareRow(row).avro));
    byTable.set(table, rows);
  }
  return [...byTable.values()];
}

/** The files of `rowsPerFile` rows: each its rows' bytes end to end, as the archiver's Parquet writer keeps them. */
function filesOf(tables: Buffer[][], rowsPerFile: number): Buffer[] {
  const files: Buffer[] = [];
  for (const rows of tables)
    for (let i = 0; i < rows.length; i += rowsPerFile)
      files.push(Buffer.concat(rows.slice(i, i + rowsPerFile)));
  return files;
}

const cpuMicros = (): number => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** CPU µs per row of `work` over every file, and the bytes it made per row. */
function perRow(files: Buffer[], work: (file: Buffer, i: number) => number): { us: number; bytes: number } {
  let bytes = 0;
  const start = cpuMicros();
  files.forEach((f, i) => (bytes += work(f, i)));
  return { us: (cpuMicros() - start) / ROWS, bytes: bytes / ROWS };
}

function deflated(file: Buffer): number {
  let bytes = 0;
  for (let at = 0; at < file.length; at += DATA_BLOCK_BYTES)
    bytes += zlib.deflateRawSync(file.subarray(at, at + DATA_BLOCK_BYTES), { level: DEFLATE_LEVEL }).length;
  return bytes;
}

function columnsOf(file: Buffer): ColumnData[] {
  const walked = walkRowChunks([file], ttlAttributes(TTL));
  if (!walked) throw new Error('bench rows the walk cannot read');
  return parquetColumns(
    walked.rows,
    { ttl: TTL },
    { dynamo: walked.dynamoImages, plain: walked.plainImages },
  );
}

interface Rounds {
  parquet: number[];
  columns: number[];
  write: number[];
  deflate: number[];
  parquetBytes: number;
  deflateBytes: number;
}

/** The two halves of a file's encoding, timed file by file in one pass (each file's columns dropped after it). */
function halves(files: Buffer[]): { columns: number; write: number } {
  let columns = 0;
  let write = 0;
  for (const file of files) {
    const start = cpuMicros();
    const data = columnsOf(file);
    const built = cpuMicros();
    writeParquet(data, ZSTD_LEVEL);
    columns += built - start;
    write += cpuMicros() - built;
  }
  return { columns: columns / ROWS, write: write / ROWS };
}

function measure(files: Buffer[]): Rounds {
  const out: Rounds = { parquet: [], columns: [], write: [], deflate: [], parquetBytes: 0, deflateBytes: 0 };
  for (let round = 0; round < ROUNDS; round++) {
    const parquet = perRow(files, (f) => encodeRowChunks([f], { ttl: TTL, zstdLevel: ZSTD_LEVEL }).length);
    const split = halves(files);
    const deflate = perRow(files, deflated);
    out.parquet.push(parquet.us);
    out.columns.push(split.columns);
    out.write.push(split.write);
    out.deflate.push(deflate.us);
    out.parquetBytes = parquet.bytes;
    out.deflateBytes = deflate.bytes;
  }
  return out;
}

const best = (x: number[]): number => Math.min(...x);
const median = (x: number[]): number => [...x].sort((a, b) => a - b)[Math.floor(x.length / 2)] as number;
const f1 = (x: number): string => x.toFixed(1);

function main(): void {
  const loadStart = loadavg()[0] as number;
  const tables = tableRows();
  const results = FILES_OF.map((rowsPerFile) => ({ rowsPerFile, ...measure(filesOf(tables, rowsPerFile)) }));
  const loadEnd = loadavg()[0] as number;
  console.log(
    `${ROWS} rows, ${ROUNDS} rounds, zstd ${ZSTD_LEVEL}, deflate ${DEFLATE_LEVEL}; µs of CPU per row (best / median)`,
  );
  console.log(
    '| rows per file | parquet | rows → columns | columns → file | deflate (raw limit) | parquet ÷ deflate | bytes/row parquet | bytes/row deflate |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const r of results) {
    console.log(
      `| ${r.rowsPerFile} | ${f1(best(r.parquet))} / ${f1(median(r.parquet))} | ${f1(best(r.columns))} / ${f1(median(r.columns))} ` +
        `| ${f1(best(r.write))} / ${f1(median(r.write))} | ${f1(best(r.deflate))} / ${f1(median(r.deflate))} ` +
        `| ${(median(r.parquet) / median(r.deflate)).toFixed(2)} | ${f1(r.parquetBytes)} | ${f1(r.deflateBytes)} |`,
    );
  }
  console.log(
    JSON.stringify({
      bench: 'parquet-encode',
      options: {
        rows: ROWS,
        rounds: ROUNDS,
        zstdLevel: ZSTD_LEVEL,
        deflateLevel: DEFLATE_LEVEL,
        payloadBytes: PAYLOAD_BYTES,
      },
      results,
      loadAverage: { start: loadStart, end: loadEnd },
    }),
  );
}

main();
