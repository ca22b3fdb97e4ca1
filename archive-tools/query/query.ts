import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { NotFoundError, ValidationError } from '../../core/errors';
import { openCatalog, type TimeRange } from '../../archive/catalog';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { z } from 'zod';
import type { ArchiveStorage } from '../../archive/storage/types';

/**
 * `ttlstream archive query "SQL"` (docs/decisions/0031): SQL over the archive with DuckDB embedded.
 * The files in scope are the catalog's (one listing: the asked tables and deletion hours, each file's current
 * generation, files with their key index). On a file system DuckDB reads the Parquet files in place; on S3 they are
 * fetched through the archive's own S3 client into a private temporary directory, within a byte limit (DuckDB's
 * httpfs extension is never needed). DuckDB reads no Avro here (its extension cannot be downloaded), so an Avro file
 * in scope (a table archived before it switched to Parquet) is read with the archive's own decoder and staged as a
 * Parquet file of the same rows: one view over both formats, `expired_at` and `ttl_mode` null in those rows (an Avro
 * file does not record the TTL settings it was written under).
 *
 * Read-only, whatever the SQL: DuckDB may open exactly the files in scope and the private directory
 * (`allowed_paths`, `allowed_directories`, `enable_external_access = false`, its own spill files there too), its
 * configuration is locked, and only one SELECT statement runs (COPY, EXPORT, ATTACH, INSTALL, SET, CREATE … are
 * refused by the parser: test/unit/archive-tools/query/archive-query.test.ts).
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

/** DuckDB's, or the staging's, word for a file in scope that is no longer there. */
const FILE_GONE = /No such file|No files found|listed but gone/i;

/** 4 GiB: a day of a busy table's Parquet files fits; more needs the setting. */
export const DEFAULT_MAX_STAGE_BYTES = 4 * 1024 ** 3;

/** The current generation of every data file in scope that has its key index (a complete roll's): one listing. */
async function filesInScope(
  storage: ArchiveStorage,
  options: Pick<QueryOptions, 'table' | 'range'>,
): Promise<string[]> {
  const catalog = openCatalog(storage);
  const files: string[] = [];
  const listed =
    options.table !== undefined
      ? catalog.listFiles(options.table, options.range)
      : catalog.listEveryTable(options.range);
  for await (const f of listed) if (f.indexPath !== null) files.push(f.path);
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
  // The Avro decoder and the Parquet encoder load only when an Avro file is in scope.
  const { decodeDataFile, parquetFormat } = await import('../../archive/format');
  return parquetFormat.encode(await decodeDataFile(body, path), { ttl: null });
}

/** Stage `paths` under `dir` (same relative paths, so DuckDB sees the Hive partitions); returns the bytes. */
async function stageFiles(
  storage: ArchiveStorage,
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
      const body = await stagedBody(storage, path);
      bytes += body.length;
      if (bytes > options.maxStageBytes) throw overLimit(bytes, options.maxStageBytes);
      await writeFile(target, body);
      options.onStage?.(++done, paths.length);
    }
  };
  await Promise.all(Array.from({ length: Math.min(8, paths.length) }, worker));
  return bytes;
}

function overLimit(bytes: number, limit: number): ValidationError {
  return new ValidationError(
    `archive query: the files to fetch or convert take more than ${limit} bytes (at least ${bytes}), over --max-stage-bytes; narrow --table/--since/--until or raise it`,
  );
}

/** DuckDB's SQL string literal. */
function literal(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

/** The root directory of a file archive (its Parquet files read in place), or S3 (every file fetched). */
export type StagingSource = { kind: 'fs'; dir: string } | { kind: 's3' };

/** What DuckDB reads: every file in scope by its path, and which of them are the archive's own files. */
interface ReadPlan {
  /** The private directory: staged files, and DuckDB's spill files. */
  dir: string;
  /** Absolute paths, in the catalog's order. */
  files: string[];
  /** The archive's files read in place (a subset of `files`). */
  inPlace: string[];
}

export async function queryArchive(
  storage: ArchiveStorage,
  source: StagingSource,
  options: QueryOptions,
): Promise<QueryResult> {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  // DuckDB opens on its own threads while the archive is listed (awaited there; a failure is not unhandled here).
  const opening = DuckDBInstance.create(':memory:');
  opening.catch(() => undefined);
  try {
    try {
      return await queryIn(opening, storage, source, options);
    } catch (err) {
      // A compaction replaced a file in scope after it was listed (docs/decisions/0037): listed again, once.
      if (!FILE_GONE.test((err as Error).message)) throw err;
      return await queryIn(opening, storage, source, options);
    }
  } finally {
    // Closed once the caller has the answer (closing takes 5–10 ms): a command prints it first, and may exit before.
    const instance = await opening.catch(() => undefined);
    if (instance) setImmediate(() => instance.closeSync());
  }
}

async function queryIn(
  opening: Promise<DuckDBInstance>,
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
    // A file archive's Parquet files are read where they are (copying them cost 25–40 ms per 12 MB, growing with
    // the scope: bench/README.md, archive-query); Avro files, and every file of an S3 archive, are staged.
    const root = source.kind === 'fs' ? source.dir : null;
    const readInPlace = (path: string): boolean => root !== null && path.endsWith('.parquet');
    const toStage = files.filter((f) => !readInPlace(f));
    const stagedBytes = await stageFiles(storage, dir, toStage, options);
    const plan: ReadPlan = {
      dir,
      files: files.map((f) => (root !== null && readInPlace(f) ? join(root, f) : join(dir, stagedPath(f)))),
      inPlace: root === null ? [] : files.filter(readInPlace).map((f) => join(root, f)),
    };
    const { columns, rows } = await runDuckDb(await opening, plan, options);
    return {
      columns,
      rows,
      files: files.length,
      stagedBytes,
      convertedAvro: files.filter((f) => f.endsWith('.avro')).length,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * From here on DuckDB may open only the files of the plan and its private directory (where it spills too, never
 * the working directory), and no setting may change back.
 */
async function lockDown(connection: DuckDBConnection, plan: ReadPlan): Promise<void> {
  await connection.run(
    [
      `SET temp_directory = ${literal(plan.dir)}`,
      `SET allowed_directories = [${literal(`${plan.dir}/`)}]`,
      ...(plan.inPlace.length > 0 ? [`SET allowed_paths = [${plan.inPlace.map(literal).join(', ')}]`] : []),
      'SET enable_external_access = false',
      'SET lock_configuration = true',
    ].join(';\n'),
  );
}

/** What json_serialize_sql answers: the parsed statements, or the parser's refusal. */
const SerializedSql = z.union([
  z.object({ error: z.literal(false), statements: z.array(z.unknown()) }),
  z.object({ error: z.literal(true), error_type: z.string().optional(), error_message: z.string() }),
]);

/**
 * Refuses the asked SQL unless it is one SELECT statement: anything else (COPY … TO an archive file in scope, which
 * DuckDB may open; EXPORT, ATTACH, INSTALL, SET, PRAGMA, CREATE … AS, EXPLAIN ANALYZE …) exits 2 before it runs.
 * DuckDB's parser decides, so a refused statement is neither bound nor run: json_serialize_sql serializes SELECT
 * statements only. (A prepared statement's type says the same, but it is bound first, and executing it bound the
 * view's files a second time: 14–30 ms per query, measured.)
 */
async function selectOnly(connection: DuckDBConnection, sql: string): Promise<void> {
  const reader = await connection.runAndReadAll(`SELECT json_serialize_sql(${literal(sql)})`);
  // Once per query: no compiled fast path (core/config.ts says why).
  const parsed = SerializedSql.parse(JSON.parse(String(reader.getRowsJson()[0]?.[0])), { jitless: true });
  if (parsed.error && /only SELECT statements/i.test(parsed.error_message))
    throw new ValidationError(
      'archive query: only a SELECT statement runs (the archive is read-only); nothing was run',
    );
  if (parsed.error)
    throw new ValidationError(
      `archive query: ${parsed.error_type === 'parser' ? 'Parser Error: ' : ''}${parsed.error_message.split('\n')[0]}`,
    );
  if (parsed.statements.length !== 1)
    throw new ValidationError(
      `archive query: expected one SELECT statement, got ${parsed.statements.length} statements`,
    );
}

async function runDuckDb(
  instance: DuckDBInstance,
  plan: ReadPlan,
  options: QueryOptions,
): Promise<{ columns: string[]; rows: unknown[][] }> {
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
    // The footers union_by_name reads when the view is made are kept for the scan, not read again.
    await connection.run('SET parquet_metadata_cache = true');
    // union_by_name: tables differ in their key columns, and a file written after columns were added has more.
    await connection.run(
      `CREATE VIEW deletions AS SELECT * FROM read_parquet([${plan.files.map(literal).join(', ')}], hive_partitioning = true, union_by_name = true)`,
    );
    await lockDown(connection, plan);
    await selectOnly(connection, options.sql);
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
  }
}
