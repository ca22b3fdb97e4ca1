import { copyFile, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { NotFoundError, ValidationError } from '../../core/errors';
import { openCatalog, type TimeRange } from '../catalog';
import { decodeDataFile, parquetFormat } from '../format';
import { decodeSegment, parseDataFilePath, type ArchiveStorage } from '../storage';

/**
 * `ttlstream archive query "SQL"` (docs/decisions/0030): SQL over the archive with DuckDB embedded.
 * The files of the asked tables and deletion hours (the catalog's pruning, each file's current
 * generation) are staged into a private temporary directory (Parquet files copied on a file
 * system, fetched through the archive's own S3 client on S3: DuckDB's httpfs extension is never
 * needed), within a byte limit; DuckDB may read only that directory and its configuration is
 * locked, so a query can never write to the archive. The view `deletions` is every staged file.
 * DuckDB reads no Avro here (its extension cannot be downloaded), so an Avro file in scope (a table
 * archived before it switched to Parquet) is read with the archive's own decoder and staged as a
 * Parquet file of the same rows: one view over both formats, `expired_at` and `ttl_mode` null in
 * those rows (an Avro file does not record the TTL settings it was written under).
 */

export interface QueryOptions {
  sql: string;
  /** Only this table's files; default every table. */
  table?: string;
  range?: TimeRange;
  /** Staged bytes allowed; a query needing more is refused before any is fetched. */
  maxStageBytes: number;
  /** Where the private staging directory is made (default the OS temp dir). */
  tempDir?: string;
  onStage?: (done: number, total: number) => void;
  /** Called about once a second while DuckDB runs, with its own progress (−1 when unknown). */
  onQueryProgress?: (percent: number, seconds: number) => void;
  signal?: AbortSignal;
}

export interface QueryResult {
  columns: string[];
  /** Rows in DuckDB's JSON form: BIGINT and DECIMAL as strings, timestamps as ISO-like strings. */
  rows: unknown[][];
  files: number;
  stagedBytes: number;
  /** Avro data files in scope, staged as Parquet files of the same rows (counted in `files` too). */
  convertedAvro: number;
}

/** 4 GiB: a day of a busy table's Parquet files fits; more needs the setting. */
export const DEFAULT_MAX_STAGE_BYTES = 4 * 1024 ** 3;

async function tablesOf(storage: ArchiveStorage): Promise<string[]> {
  const segments = new Set<string>();
  for await (const path of storage.list('table=')) {
    const parsed = parseDataFilePath(path);
    if (parsed) segments.add(parsed.tableSegment);
  }
  return [...segments].map((s) => decodeSegment(s) ?? s).sort();
}

/** The current generation of every data file in scope that has its key index (a complete roll's). */
export async function filesInScope(
  storage: ArchiveStorage,
  options: Pick<QueryOptions, 'table' | 'range'>,
): Promise<string[]> {
  const tables = options.table !== undefined ? [options.table] : await tablesOf(storage);
  const catalog = openCatalog(storage);
  const files: string[] = [];
  for (const table of tables) {
    for await (const f of catalog.listFiles(table, options.range))
      if (f.indexPath !== null) files.push(f.path);
  }
  return files;
}

/** Where a file is staged: a Parquet file as it is; an Avro file as the Parquet file of its rows. */
function stagedPath(path: string): string {
  return path.endsWith('.avro') ? `${path.slice(0, -'.avro'.length)}.parquet` : path;
}

/** The bytes a file is staged as: its own (Parquet), or its rows, decoded, as a Parquet file (Avro). */
async function stagedBody(storage: ArchiveStorage, path: string): Promise<Buffer> {
  const body = await storage.get(path);
  if (body === null) throw new NotFoundError(`${path}: listed but gone from ${storage.root}`);
  if (!path.endsWith('.avro')) return body;
  return parquetFormat.encode(await decodeDataFile(body, path), { ttl: null });
}

/** Stage `paths` under `dir` (same relative paths, so DuckDB sees the Hive partitions); returns the bytes. */
async function stageFiles(
  storage: ArchiveStorage,
  root: string | null,
  dir: string,
  paths: string[],
  options: QueryOptions,
): Promise<number> {
  let bytes = 0;
  let done = 0;
  const next = paths[Symbol.iterator]();
  const worker = async (): Promise<void> => {
    for (let r = next.next(); !r.done; r = next.next()) {
      if (options.signal?.aborted) throw new ValidationError('archive query: stopped');
      const path = r.value;
      const target = join(dir, stagedPath(path));
      await mkdir(dirname(target), { recursive: true });
      if (root !== null && path.endsWith('.parquet')) {
        bytes += (await stat(join(root, path))).size;
        if (bytes > options.maxStageBytes) throw overLimit(bytes, options.maxStageBytes);
        await copyFile(join(root, path), target);
      } else {
        const body = await stagedBody(storage, path);
        bytes += body.length;
        if (bytes > options.maxStageBytes) throw overLimit(bytes, options.maxStageBytes);
        await writeFile(target, body);
      }
      options.onStage?.(++done, paths.length);
    }
  };
  await Promise.all(Array.from({ length: Math.min(8, paths.length) }, worker));
  return bytes;
}

function overLimit(bytes: number, limit: number): ValidationError {
  return new ValidationError(
    `archive query: the files in scope take more than ${limit} bytes (at least ${bytes}), over --max-stage-bytes; narrow --table/--since/--until or raise it`,
  );
}

/** DuckDB's SQL string literal. */
function literal(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

/** The root directory of a file archive (copied from directly), or null for S3 (fetched). */
export type StagingSource = { kind: 'fs'; dir: string } | { kind: 's3' };

export async function queryArchive(
  storage: ArchiveStorage,
  source: StagingSource,
  options: QueryOptions,
): Promise<QueryResult> {
  const files = await filesInScope(storage, options);
  if (files.length === 0)
    throw new ValidationError(
      `archive query: no data file ${options.table !== undefined ? `of table ${options.table} ` : ''}in the window`,
    );
  const dir = await mkdtemp(join(options.tempDir ?? tmpdir(), 'ttlstream-query-'));
  try {
    const staged = await stageFiles(storage, source.kind === 'fs' ? source.dir : null, dir, files, options);
    const { columns, rows } = await runDuckDb(dir, files.map(stagedPath), options);
    return {
      columns,
      rows,
      files: files.length,
      stagedBytes: staged,
      convertedAvro: files.filter((f) => f.endsWith('.avro')).length,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function runDuckDb(
  dir: string,
  paths: string[],
  options: QueryOptions,
): Promise<{ columns: string[]; rows: unknown[][] }> {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  const started = Date.now();
  const ticker = setInterval(() => {
    const p = connection.progress;
    options.onQueryProgress?.(p.percentage, Math.round((Date.now() - started) / 1000));
  }, 1000);
  ticker.unref();
  const stop = (): void => connection.interrupt();
  options.signal?.addEventListener('abort', stop);
  try {
    const files = paths.map((p) => literal(join(dir, p))).join(', ');
    await connection.run(
      `CREATE VIEW deletions AS SELECT * FROM read_parquet([${files}], hive_partitioning = true, union_by_name = true)`,
    );
    // Only the staging directory, and no setting may change back: the query cannot reach the archive.
    await connection.run(`SET allowed_directories = [${literal(`${dir}/`)}]`);
    await connection.run('SET enable_external_access = false');
    await connection.run('SET lock_configuration = true');
    let reader;
    try {
      reader = await connection.runAndReadAll(options.sql);
    } catch (err) {
      throw new ValidationError(`archive query: ${(err as Error).message.split('\n')[0]}`, { cause: err });
    }
    return { columns: reader.columnNames(), rows: reader.getRowsJson() };
  } finally {
    clearInterval(ticker);
    options.signal?.removeEventListener('abort', stop);
    connection.closeSync();
    instance.closeSync();
  }
}
