import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { columnsOfParquet, createTableDdl } from '../../../../archive-tools/query/ddl';
import { queryArchive } from '../../../../archive-tools/query/query';
import { prepareRow } from '../../../../archive/rows';
import { FsArchiveStorage } from '../../../../archive/storage';
import { ValidationError } from '../../../../core/errors';
import { toArchived } from '../../../../schemas';
import { archiveRows, makeRecord } from '../../../support/archive-fixture';
import { cli } from '../../../support/cli';
import { parquetEncodingPool } from '../../../../archive/format';

const H = Math.floor(Date.UTC(2024, 4, 1, 10, 0) / 1000);

// The encoding threads load their modules from TypeScript source here, which takes seconds on a busy machine: once,
// before the tests, rather than inside the first test's time limit.
beforeAll(() => parquetEncodingPool.warm(), 60_000);

describe('archive query (DuckDB over the archive, Parquet and Avro files)', () => {
  let dir: string;
  let storage: FsArchiveStorage;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ttlstream-query-test-'));
    storage = new FsArchiveStorage(dir);
    const rows = (table: string, n: number, first: number) =>
      Array.from({ length: n }, (_, i) =>
        prepareRow(
          toArchived(
            { kind: 'remove', record: makeRecord(table, first + i, H + i * 900, 50) },
            { topic: 't', partition: 0, offset: String(first + i), timestamp: '1' },
          ),
        ),
      );
    await archiveRows(storage, 't', rows('users', 8, 0), { perRoll: 4, format: 'parquet' });
    // An Avro roll of another table: read with the archive's decoder and staged as Parquet, so in the view too.
    await archiveRows(storage, 't', rows('carts', 2, 8), { perRoll: 2, first: 8n, format: 'avro' });
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const run = (sql: string, more: Partial<Parameters<typeof queryArchive>[2]> = {}) =>
    queryArchive(storage, { kind: 'fs', dir }, { sql, maxStageBytes: 1e9, ...more });

  it('answers per table per hour over both formats, pruned by table and time', async () => {
    const all = await run('select table_name, hour, count(*) n from deletions group by all order by all');
    expect(all.columns).toEqual(['table_name', 'hour', 'n']);
    expect(all.rows).toEqual([
      ['carts', '10', '2'],
      ['users', '10', '4'],
      ['users', '11', '4'],
    ]);
    expect(all.convertedAvro).toBe(1);
    // The Avro rows are the same rows: their images and keys as the Avro file holds them, TTL columns unknown.
    const carts = await run(
      "select key_pk, key_sk, old_image->>'$.n.N', expired_at, ttl_mode from deletions where table_name = 'carts' order by 1",
    );
    expect(carts.rows).toEqual([
      ['item-8', 1, '8', null, null],
      ['item-9', 2, '9', null, null],
    ]);
    const pruned = await run('select count(*) from deletions', {
      table: 'users',
      range: { fromMs: (H + 3600) * 1000, toMs: (H + 7200) * 1000 },
    });
    expect(pruned.rows).toEqual([['4']]);
    expect(pruned.files).toBeLessThan(all.files);
  });

  it('finds every deletion of one key through its typed and JSON columns', async () => {
    const r = await run(
      "select key_pk, key_sk, item->>'$.n' from deletions where key_pk = 'item-5' or json_extract_string(old_image, '$.pk.S') = 'item-6' order by 1",
    );
    expect(r.rows).toEqual([
      ['item-5', 5, '5'],
      ['item-6', 6, '6'],
    ]);
  });

  /** Every file under the archive root with the SHA-256 of its bytes. */
  async function snapshot(): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile()) continue;
      const path = join(entry.parentPath, entry.name);
      out[path] = createHash('sha256')
        .update(await readFile(path))
        .digest('hex');
    }
    return out;
  }

  it('reads nothing outside the files in scope; bad SQL and an empty scope are clear errors', async () => {
    const before = await snapshot();
    // The archive's own files are read in place, but only those in scope: not a glob over the root, not an index.
    await expect(run(`select * from read_parquet('${dir}/**/*.parquet')`)).rejects.toThrow(ValidationError);
    await expect(run(`select * from read_text('${dir}/**/*.idx.json')`)).rejects.toThrow(ValidationError);
    await expect(
      run(`select count(*) from read_parquet('${dir}/table=users/**/*.parquet')`, { table: 'carts' }),
    ).rejects.toThrow(ValidationError);
    await expect(run('selec 1')).rejects.toThrow(/archive query: Parser Error/);
    await expect(run('select 1', { table: 'nothing' })).rejects.toThrow(
      /no data file of table nothing in the window/,
    );
    // Only the Avro file is staged (converted); the Parquet files are read in place and count nothing.
    await expect(run('select 1', { maxStageBytes: 10 })).rejects.toThrow(/max-stage-bytes/);
    expect((await run('select count(*) from deletions', { table: 'users', maxStageBytes: 1 })).rows).toEqual([
      ['8'],
    ]);
    expect(await snapshot()).toEqual(before);
  });

  it('runs one SELECT and refuses every other statement before it runs, with exit 2; the archive is unchanged', async () => {
    const before = await snapshot();
    const inScope = Object.keys(before).find((p) => p.endsWith('.parquet')) as string;
    const refused = [
      // An archive file in scope is one DuckDB may open: only the statement's type keeps a COPY off it.
      `copy (select 1 as a) to '${inScope}' (format parquet)`,
      `copy deletions to '${join(dir, 'x.csv')}'`,
      `export database '${join(dir, 'export')}'`,
      `attach '${join(dir, 'x.duckdb')}' as x`,
      'install httpfs',
      'load httpfs',
      'set enable_external_access = true',
      'set lock_configuration = false',
      "pragma enable_profiling = 'json'",
      'create table t as select * from deletions',
      'create view v as select 1',
      `explain analyze copy (select 1) to '${inScope}'`,
      'call pragma_version()',
      'checkpoint',
      `select 1; copy (select 1) to '${join(dir, 'y.csv')}'`,
    ];
    for (const sql of refused) {
      const r = await cli(['archive', 'query', '--archive', `file://${dir}`, sql]);
      expect({ sql, code: r.code, stdout: r.stdout }).toEqual({ sql, code: 2, stdout: '' });
      // Refused by DuckDB's parser for what it is, before anything is bound or run.
      expect(r.stderr).toMatch(
        /^ttlstream: archive query: (only a SELECT statement runs \(the archive is read-only\)|expected one SELECT statement)/,
      );
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
    expect(await snapshot()).toEqual(before);
    // What an analyst asks still runs, in DuckDB's forms of a SELECT.
    for (const sql of [
      'select count(*) from deletions',
      'from deletions select count(*)',
      'with d as (select * from deletions) select count(*) from d',
      'describe deletions',
      'summarize select deleted_at from deletions',
    ]) {
      const r = await cli(['archive', 'query', '--archive', `file://${dir}`, '--json', sql]);
      expect({ sql, code: r.code, stderr: r.stderr.replace(/^note: .*\n/m, '') }).toEqual({
        sql,
        code: 0,
        stderr: '',
      });
    }
    // A dozen DuckDB statements: seconds on a busy machine, so the limit only catches a hang.
  }, 30_000);

  it("prints DDL with the file's columns and Athena partition projection", async () => {
    const files = await readdir(join(dir, 'table=users', 'date=2024-05-01', 'hour=10'));
    const file = files.find((f) => f.endsWith('.parquet')) as string;
    const body = await storage.get(`table=users/date=2024-05-01/hour=10/${file}`);
    const columns = columnsOfParquet(body as Buffer);
    expect(columns).toContainEqual({ name: 'key_pk', type: 'string' });
    expect(columns).toContainEqual({ name: 'deleted_at', type: 'timestamp' });
    const ddl = createTableDdl(columns, {
      engine: 'athena',
      table: 'users',
      location: 's3://b/p/',
      since: '2024-01-01',
      besideIndexes: 0,
    });
    expect(ddl).toContain("LOCATION 's3://b/p/table=users/'");
    expect(ddl).toContain("'storage.location.template' = 's3://b/p/table=users/date=${date}/hour=${hour}/'");
    const spark = createTableDdl(columns, {
      engine: 'spark',
      table: 'users',
      location: 's3://b/p',
      since: '2024-01-01',
      besideIndexes: 0,
    });
    expect(spark).toContain("LOCATION 's3a://b/p/table=users/'");
    // The folders hold only Parquet files: key indexes live under _index/ (a real Spark reads the folder so in
    // test/integration/archive/parquet-readers.test.ts).
    expect(spark).toContain("OPTIONS (mergeSchema 'true')");
    // Hours written before still hold key indexes beside their files: only the Parquet objects then.
    const older = createTableDdl(columns, {
      engine: 'spark',
      table: 'users',
      location: 's3://b/p',
      since: '2024-01-01',
      besideIndexes: 3,
    });
    expect(older).toContain("OPTIONS (pathGlobFilter '*.parquet', mergeSchema 'true')");
  });
});
