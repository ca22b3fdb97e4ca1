/**
 * `ttlstream archive query` beside DuckDB reading the same Parquet files directly, in one run (bench/README.md).
 *
 *   npx tsx bench/archive-query.ts [--rows 1000000] [--tables 4] [--hours 48] [--keys 50000] [--rounds 3] [--archive DIR]
 *
 * `--archive DIR` keeps the seeded archive in DIR and reuses it on the next run with the same seeding options (its
 * `bench-seed.json` says which; `--rounds 0` only seeds it); without it, the archive is made in a temporary directory
 * and removed at the end.
 * Writes a file-system archive of `--rows` REMOVE rows in Parquet files (the archiver's layout: data files, key
 * indexes, manifests; rolls of two hours of deletions, so a file per table and UTC hour) over `--tables` tables and
 * `--hours` hours, each key of `--keys` deleted many times. Then, `--rounds` times, in alternating order, the two
 * queries an analyst and a compliance officer ask:
 *   per-day:  deletions per table per day;
 *   one-key:  every deletion of one key, with its image;
 * each run four ways:
 *   1. `ttlstream archive query` as a process (the built command, dist/: npm run build first), staging included;
 *   2. DuckDB directly, as a process (Node + @duckdb/node-api, read_parquet over the archive's files in place);
 *   3. queryArchive() in this process (staging + DuckDB, no process start);
 *   4. DuckDB directly in this process.
 * Processes are timed with /usr/bin/time (wall and CPU, children included). Prints the median round of each, the
 * ratios archive query ÷ DuckDB direct, and one JSON line. Needs no service.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_MAX_STAGE_BYTES, queryArchive } from '../archive-tools/query/query';
import { FsArchiveStorage } from '../archive/storage';
import type { Item } from '../policy';
import type { ArchivedRecord } from '../schemas';
import { removeRow, writeRoll } from '../test/support/archive-fixture';
import { exitAfterOutput } from '../core/exit';

const ROOT = resolve(__dirname, '..');
const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000000' },
    tables: { type: 'string', default: '4' },
    hours: { type: 'string', default: '48' },
    keys: { type: 'string', default: '50000' },
    rounds: { type: 'string', default: '3' },
    archive: { type: 'string' },
  },
});
const ROWS = Number(values.rows);
const TABLES = Number(values.tables);
const HOURS = Number(values.hours);
const KEYS = Number(values.keys);
const ROUNDS = Number(values.rounds);
const START_S = Math.floor(Date.UTC(2026, 10, 1, 0, 0) / 1000);
const WORDS = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet'];
// A key the seeding deletes many times (row 4242's), so the one-key query has an answer at every --rows past it.
const KEY = `customer#${(4242 * 7919) % KEYS}`;

const QUERIES: Record<string, string> = {
  'per-day':
    'select table_name, cast(deleted_at as date) as day, count(*) as deletions from deletions group by all order by all',
  'one-key': `select table_name, event_id, deleted_at, old_image from deletions where key_pk = '${KEY}' order by deleted_at, event_id`,
};

function imageOf(i: number): Item {
  const note = Array.from({ length: 24 }, (_, w) => WORDS[(i * 7 + w * 3) % WORDS.length]).join(' ');
  return {
    status: { S: ['shipped', 'cancelled', 'returned'][i % 3] as string },
    amount: { N: `${i % 1000}.${i % 97}` },
    lines: { L: [{ M: { sku: { S: `sku-${i % 500}` }, qty: { N: String(1 + (i % 4)) } } }] },
    tags: { SS: ['retail', `region-${i % 8}`] },
    note: { S: note },
  };
}

/** Rolls of two hours of deletions, every table in each: one file per table and hour, as a trickle makes them. */
async function seed(storage: FsArchiveStorage): Promise<void> {
  const perHour = Math.ceil(ROWS / HOURS);
  let first = 0n;
  let batch: ArchivedRecord[] = [];
  for (let i = 0; i < ROWS; i++) {
    const hour = Math.floor(i / perHour);
    const table = `orders_${i % TABLES}`;
    batch.push(
      removeRow({
        table,
        keys: { pk: { S: `customer#${(i * 7919) % KEYS}` }, sk: { N: String(i) } },
        image: { ...imageOf(i), expiresAt: { N: String(START_S + hour * 3600) } },
        deletedAtS: START_S + hour * 3600 + (i % 3600),
      }),
    );
    const lastOfRoll = (i + 1) % (2 * perHour) === 0 || i === ROWS - 1;
    if (lastOfRoll) {
      await writeRoll(storage, batch, { first, format: 'parquet' });
      first += BigInt(batch.length);
      batch = [];
      process.stderr.write(`\rseeded ${i + 1} rows`);
    }
  }
  process.stderr.write('\n');
}

interface Timing {
  wallS: number;
  cpuS: number | null;
  rows: number;
}

/** A process timed by /usr/bin/time: its wall and CPU (user + system, its children included). */
function timedProcess(args: string[]): { wallS: number; cpuS: number; stdout: string } {
  const out = spawnSync('/usr/bin/time', ['-f', '%e %U %S', ...args], {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  if (out.status !== 0) throw new Error(`${args.join(' ')} failed (${out.status}):\n${out.stderr}`);
  const last = out.stderr.trim().split('\n').at(-1) ?? '';
  const [wall, user, sys] = last.split(' ').map(Number);
  return { wallS: wall ?? NaN, cpuS: (user ?? NaN) + (sys ?? NaN), stdout: out.stdout };
}

const DIRECT_SCRIPT = `
const { DuckDBInstance } = require('@duckdb/node-api');
(async () => {
  const [dir, sql] = process.argv.slice(1);
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  await c.run("create view deletions as select * from read_parquet('" + dir + "/table=*/date=*/hour=*/*.parquet', hive_partitioning = true, union_by_name = true)");
  const r = await c.runAndReadAll(sql);
  process.stdout.write(JSON.stringify(r.getRowsJson()));
})().catch((e) => { console.error(e); process.exit(1); });`;

async function directInProcess(dir: string, sql: string): Promise<number> {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  await c.run(
    `create view deletions as select * from read_parquet('${dir}/table=*/date=*/hour=*/*.parquet', hive_partitioning = true, union_by_name = true)`,
  );
  const rows = (await c.runAndReadAll(sql)).getRowsJson().length;
  c.closeSync();
  db.closeSync();
  return rows;
}

async function inProcess(fn: () => Promise<number>): Promise<Timing> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const rows = await fn();
  const u = process.cpuUsage(c0);
  return { wallS: (performance.now() - t0) / 1000, cpuS: (u.user + u.system) / 1e6, rows };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

function du(dir: string, suffix: string): { files: number; bytes: number } {
  let files = 0;
  let bytes = 0;
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith(suffix)) {
        files += 1;
        bytes += statSync(p).size;
      }
    }
  };
  walk(dir);
  return { files, bytes };
}

async function main(): Promise<void> {
  const cli = resolve(ROOT, 'dist', 'cli', 'main.js');
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run npm run build first`);
  const load = [loadavg()[0] as number];
  const { dir, seedS } = await seededArchive();
  const storage = new FsArchiveStorage(dir);
  const data = du(dir, '.parquet');
  console.log(
    `archive: ${ROWS.toLocaleString('en-US')} rows, ${data.files} Parquet files, ${(data.bytes / 1e6).toFixed(1)} MB (${(data.bytes / ROWS).toFixed(1)} B/row), ${seedS === null ? `reused from ${dir}` : `seeded in ${seedS.toFixed(0)} s`}`,
  );
  // `--rounds 0 --archive DIR`: seed DIR for later runs, query nothing.
  if (ROUNDS === 0) return;
  const ways = [
    'archive query (process)',
    'DuckDB direct (process)',
    'archive query (in-process)',
    'DuckDB direct (in-process)',
  ];
  const results: Record<string, Record<string, Timing[]>> = {};
  for (const [name, sql] of Object.entries(QUERIES)) {
    results[name] = Object.fromEntries(ways.map((w) => [w, [] as Timing[]]));
    const answers = new Set<string>();
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? ways : [...ways].reverse();
      for (const way of order) {
        let t: Timing;
        if (way === ways[0]) {
          const p = timedProcess([
            process.execPath,
            cli,
            'archive',
            'query',
            '--archive',
            `file://${dir}`,
            '--json',
            sql,
          ]);
          answers.add(JSON.stringify(JSON.parse(p.stdout)));
          t = { wallS: p.wallS, cpuS: p.cpuS, rows: (JSON.parse(p.stdout) as unknown[]).length };
        } else if (way === ways[1]) {
          const p = timedProcess([process.execPath, '-e', DIRECT_SCRIPT, dir, sql]);
          t = { wallS: p.wallS, cpuS: p.cpuS, rows: (JSON.parse(p.stdout) as unknown[]).length };
        } else if (way === ways[2]) {
          t = await inProcess(async () => {
            const r = await queryArchive(
              storage,
              { kind: 'fs', dir },
              { sql, maxStageBytes: DEFAULT_MAX_STAGE_BYTES },
            );
            return r.rows.length;
          });
        } else t = await inProcess(() => directInProcess(dir, sql));
        results[name]![way]!.push(t);
      }
    }
    if (answers.size !== 1) throw new Error(`${name}: archive query gave different answers across rounds`);
  }
  load.push(loadavg()[0] as number);

  const summary: Record<string, unknown> = {};
  console.log('');
  console.log(
    `${'query'.padEnd(9)} ${'way'.padEnd(28)} ${'rows'.padStart(6)} ${'wall s'.padStart(7)} ${'CPU s'.padStart(7)}`,
  );
  for (const name of Object.keys(QUERIES)) {
    const per: Record<string, { wallS: number; cpuS: number | null; rows: number }> = {};
    for (const way of ways) {
      const ts = results[name]![way]!;
      per[way] = {
        wallS: median(ts.map((t) => t.wallS)),
        cpuS: median(ts.map((t) => t.cpuS ?? NaN)),
        rows: ts[0]?.rows ?? 0,
      };
      console.log(
        `${name.padEnd(9)} ${way.padEnd(28)} ${String(per[way]!.rows).padStart(6)} ${per[way]!.wallS.toFixed(2).padStart(7)} ${(per[way]!.cpuS ?? NaN).toFixed(2).padStart(7)}`,
      );
    }
    const ratio = (a: string, b: string): number => (per[a]?.wallS ?? NaN) / (per[b]?.wallS ?? NaN);
    const processRatio = ratio(ways[0] as string, ways[1] as string);
    const inProcessRatio = ratio(ways[2] as string, ways[3] as string);
    console.log(
      `${name.padEnd(9)} archive query ÷ DuckDB direct: ${processRatio.toFixed(2)} (processes), ${inProcessRatio.toFixed(2)} (in-process); target ≤ 1.5`,
    );
    summary[name] = { ...per, processRatio, inProcessRatio };
  }
  console.log(`load average (1 min) at start ${load[0]?.toFixed(2)}, at end ${load[1]?.toFixed(2)}`);
  console.log('');
  console.log(
    JSON.stringify({
      bench: 'archive-query',
      rows: ROWS,
      tables: TABLES,
      hours: HOURS,
      files: data.files,
      parquetBytes: data.bytes,
      bytesPerRow: data.bytes / ROWS,
      rounds: ROUNDS,
      queries: QUERIES,
      results: summary,
      loadAverage: { start: load[0], end: load[1] },
      node: execFileSync(process.execPath, ['--version'], { encoding: 'utf8' }).trim(),
    }),
  );
  if (values.archive === undefined) rmSync(dir, { recursive: true, force: true });
}

/**
 * The archive to query: `--archive DIR` as seeded by an earlier run with the same options (its bench-seed.json), or
 * seeded now (a temporary directory without --archive). A DIR seeded with other options is emptied and seeded again;
 * a non-empty DIR that this bench did not seed is refused.
 */
async function seededArchive(): Promise<{ dir: string; seedS: number | null }> {
  const done = JSON.stringify({ rows: ROWS, tables: TABLES, hours: HOURS, keys: KEYS });
  const dir =
    values.archive === undefined
      ? mkdtempSync(join(tmpdir(), 'ttlstream-bench-query-'))
      : resolve(values.archive);
  const marker = join(dir, 'bench-seed.json');
  if (values.archive !== undefined) {
    if (existsSync(marker) && readFileSync(marker, 'utf8') === done) return { dir, seedS: null };
    if (!existsSync(marker) && existsSync(dir) && readdirSync(dir).length > 0)
      throw new Error(`--archive ${dir}: not empty and not seeded by this bench (no bench-seed.json)`);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    // Marked as ours before seeding, complete only after: an interrupted seeding is seeded again next time.
    writeFileSync(marker, 'seeding');
  }
  const t0 = performance.now();
  await seed(new FsArchiveStorage(dir));
  const seedS = (performance.now() - t0) / 1000;
  if (values.archive !== undefined) writeFileSync(marker, done);
  return { dir, seedS };
}

main().catch((err: unknown) => {
  console.error(err);
  exitAfterOutput(1);
});
