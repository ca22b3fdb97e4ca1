/**
 * An archive at a year's scale, before and after compaction (docs/decisions/0037, 0038), in one run (bench/README.md).
 *
 *   npx tsx bench/archive-scale.ts [--records 2000000] [--days 14] [--partitions 6] [--formats avro,parquet]
 *                                  [--s3-days 2] [--s3-partitions 3] [--s3-records 100000] [--skip-s3]
 *                                  [--probe-rows 150000] [--max-rows 100000] [--keep DIR]
 *
 * A generator writes, through the archive's own writer (one real partition worker per partition, one roll a
 * minute; not the Kafka path, so it runs in minutes), `--records` REMOVE rows over `--days` days × 24 hours ×
 * `--partitions` partitions: days × 8,640 one-minute files at 6 partitions. Two keys are each deleted three times,
 * on three days. Then, per format (file system), before and after `archive compact`:
 *   - data files per day and their median size;
 *   - `archive query` of the deletions per day over every day (DuckDB, the catalog's files);
 *   - `archive erase` of a key in 3 files (a different key before and after): objects read (GETs that found one),
 *     bytes, requests, seconds, beside the ideal (the 3 files plus one key index per day);
 *   - `archive verify` of the whole archive;
 * and compaction's records/s (in a process of its own) beside a raw read-and-rewrite of the same files, hour by hour,
 * with the same codec (another process): ratio target ≥ 0.7; both processes' peak RSS. A memory probe compacts one
 * large hour (`--probe-rows` rows) with three target sizes (and `--max-rows`, archive.compactMaxRows): peak RSS
 * follows the target, not the hour. A smaller run on the S3 server (moto, the lane's stack) counts S3 requests of
 * the same steps. Prints a table and one JSON line.
 * Needs the local stack only for the S3 run.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { compactArchive } from '../archive-tools/compact';
import { eraseArchive } from '../archive-tools/erase';
import { DEFAULT_MAX_STAGE_BYTES, queryArchive } from '../archive-tools/query/query';
import { FsArchiveStorage, openArchiveStorage, type DataFormat } from '../archive/storage';
import { verifyArchive } from '../archive-tools/verify';
import { createS3Client } from '../core/clients';
import { loadConfig } from '../core/config';
import { exitAfterOutput } from '../core/exit';
import {
  CountingStorage,
  FastFsStorage,
  generate,
  dayStats,
  rawRewrite,
  ERASE_KEYS,
  TABLE,
} from './archive-scale-parts';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '2000000' },
    days: { type: 'string', default: '14' },
    partitions: { type: 'string', default: '6' },
    formats: { type: 'string', default: 'avro,parquet' },
    's3-days': { type: 'string', default: '2' },
    's3-partitions': { type: 'string', default: '3' },
    's3-records': { type: 'string', default: '100000' },
    'skip-s3': { type: 'boolean', default: false },
    'probe-rows': { type: 'string', default: '150000' },
    'max-rows': { type: 'string', default: '100000' },
    'avro-query-days': { type: 'string', default: '1' },
    keep: { type: 'string' },
    phase: { type: 'string', default: 'main' },
    dir: { type: 'string' },
    format: { type: 'string' },
    target: { type: 'string' },
  },
});

const PER_DAY_SQL =
  'select cast(deleted_at as date) as day, count(*) as deletions from deletions group by all order by all';
const COMPACT = {
  afterMs: 2 * 3_600_000,
  maxRows: Number(values['max-rows']),
  levels: {},
  retentionDays: async () => null,
  actor: 'bench',
};

interface Step {
  seconds: number;
  counts?: ReturnType<CountingStorage['snapshot']>;
}

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; seconds: number }> {
  const t0 = performance.now();
  const value = await fn();
  return { value, seconds: (performance.now() - t0) / 1000 };
}

interface ChildResult {
  rows: number;
  files: number;
  seconds: number;
  cpuS: number;
  peakRssMB: number;
}

/** One child process of this script (`--phase compact|raw`), its JSON answer and peak RSS. */
function child(phase: string, dir: string, format: DataFormat, target?: number): ChildResult {
  const profile = process.env.BENCH_CPU_PROFILE_DIR;
  const args = [
    ...(profile ? ['--cpu-prof', '--cpu-prof-dir', join(profile, `${phase}-${format}`)] : []),
    ...['--import', 'tsx', __filename, '--phase', phase, '--dir', dir, '--format', format],
  ];
  args.push('--max-rows', String(values['max-rows']));
  if (target !== undefined) args.push('--target', String(target));
  const out = spawnSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (out.status !== 0) throw new Error(`${phase} failed (${out.status}):\n${out.stderr}`);
  return JSON.parse(out.stdout.trim().split('\n').at(-1) ?? '{}') as ChildResult;
}

/**
 * This process's peak RSS in KiB: Linux's VmHWM, its own address space's. getrusage's maxRSS of a spawned child starts
 * at its parent's RSS when it forked (Linux keeps it across exec), so it showed the bench's own size, not the child's.
 */
function peakRss(): number {
  try {
    const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m) return Number(m[1]);
  } catch {
    // not Linux: getrusage's figure
  }
  return process.resourceUsage().maxRSS;
}

/** The child phases: compaction, or the raw read-and-rewrite, of the archive in `--dir`. */
async function childPhase(): Promise<void> {
  const storage = new FsArchiveStorage(values.dir as string);
  const format = values.format as DataFormat;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let rows: number;
  let files: number;
  if (values.phase === 'compact') {
    const r = await compactArchive(storage, {
      ...COMPACT,
      format,
      targetBytes: Number(values.target ?? 128 * 1024 * 1024),
    });
    if (r.failed.length > 0) throw new Error(JSON.stringify(r.failed));
    rows = r.totals.rowsIn;
    files = r.totals.inputs;
  } else ({ rows, files } = await rawRewrite(storage, format, join(values.dir as string, '..', 'raw-out')));
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const peakRssMB = peakRss() / 1024;
  console.log(JSON.stringify({ rows, files, seconds, cpuS: (cpu.user + cpu.system) / 1e6, peakRssMB }));
}

async function measure(
  storage: CountingStorage,
  dir: string | null,
  key: number,
  days: number,
  queryDays = days,
) {
  const stats = (await dayStats(storage.inner)).sort((a, b) => (a.date < b.date ? -1 : 1));
  const source = dir ? { kind: 'fs' as const, dir } : { kind: 's3' as const };
  // Over every day, or (an Avro archive before compaction: each file converted) the first `queryDays`, scaled up.
  const fromMs = Date.parse(`${stats[0]?.date}T00:00:00Z`);
  const range = queryDays < days ? { fromMs, toMs: fromMs + queryDays * 86_400_000 } : undefined;
  storage.reset();
  const query = await timed(() =>
    queryArchive(storage, source, {
      sql: PER_DAY_SQL,
      table: TABLE,
      maxStageBytes: 64 * DEFAULT_MAX_STAGE_BYTES,
      ...(range ? { range } : {}),
    }),
  );
  const queryCounts = storage.snapshot();
  if (query.value.rows.length !== Math.min(days, queryDays))
    throw new Error(`per-day query: ${query.value.rows.length} days`);
  query.seconds *= days / Math.min(days, queryDays);
  storage.reset();
  const erase = await timed(() =>
    eraseArchive(storage, {
      table: TABLE,
      keys: [ERASE_KEYS[key] as never],
      reason: 'bench',
      actor: 'bench',
    }),
  );
  const eraseCounts = storage.snapshot();
  if (erase.value.files.length !== 3) throw new Error(`erase found ${erase.value.files.length} files`);
  storage.reset();
  const verify = await timed(() => verifyArchive(storage));
  if (verify.value.findings.length > 0) throw new Error(JSON.stringify(verify.value.findings.slice(0, 3)));
  const verifyCounts = storage.snapshot();
  return {
    days: stats,
    query: { seconds: query.seconds, counts: queryCounts, scopeDays: Math.min(days, queryDays) },
    erase: { seconds: erase.seconds, counts: eraseCounts, ideal: 3 + days } satisfies Step & {
      ideal: number;
    },
    verify: { seconds: verify.seconds, counts: verifyCounts } satisfies Step,
  };
}

async function fsRun(format: DataFormat, root: string) {
  const records = Number(values.records);
  const days = Number(values.days);
  const partitions = Number(values.partitions);
  const dir = join(root, format, 'archive');
  const gen = await timed(() => generate(new FastFsStorage(dir), { records, days, partitions, format }));
  process.stderr.write(`\n${format}: generated in ${gen.seconds.toFixed(0)} s\n`);
  const storage = new CountingStorage(new FsArchiveStorage(dir));
  const queryDays = format === 'avro' ? Number(values['avro-query-days']) : days;
  const before = await measure(storage, dir, 0, days, queryDays);
  process.stderr.write(`${format}: measured before\n`);
  const raw = child('raw', dir, format);
  const compacted = child('compact', dir, format);
  process.stderr.write(`${format}: compacted\n`);
  const after = await measure(storage, dir, 1, days);
  return { format, records, days, partitions, generateS: gen.seconds, before, after, raw, compacted };
}

async function probe(root: string) {
  const rows = Number(values['probe-rows']);
  const dir = join(root, 'probe', 'archive');
  await generate(new FastFsStorage(dir), { records: rows, days: 1 / 24, partitions: 6, format: 'parquet' });
  const out: Array<ChildResult & { targetMiB: number }> = [];
  for (const target of [2, 8, 128]) {
    const copy = join(root, 'probe', `t${target}`);
    spawnSync('cp', ['-a', dir, copy]);
    out.push({ targetMiB: target, ...child('compact', copy, 'parquet', target * 1024 * 1024) });
  }
  return { rows, runs: out };
}

async function s3Run() {
  const config = loadConfig({ overrides: { log: { level: 'silent' } } });
  const s3 = createS3Client(config);
  const bucket = `bench-scale-${Date.now().toString(36)}`;
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  const storage = new CountingStorage(
    openArchiveStorage({ ...config, archive: { ...config.archive, url: `s3://${bucket}/a` } }, s3),
  );
  const days = Number(values['s3-days']);
  const spec = {
    records: Number(values['s3-records']),
    days,
    partitions: Number(values['s3-partitions']),
    format: 'parquet' as const,
  };
  const gen = await timed(() => generate(storage.inner, spec));
  process.stderr.write(`\ns3: generated in ${gen.seconds.toFixed(0)} s\n`);
  const before = await measure(storage, null, 0, days);
  storage.reset();
  const compaction = await timed(() =>
    compactArchive(storage, { ...COMPACT, format: 'parquet', targetBytes: 128 * 1024 * 1024 }),
  );
  const compactCounts = storage.snapshot();
  const after = await measure(storage, null, 1, days);
  return {
    ...spec,
    generateS: gen.seconds,
    before,
    after,
    compaction: { seconds: compaction.seconds, counts: compactCounts },
  };
}

async function main(): Promise<void> {
  const load = [loadavg()[0] as number];
  const root = values.keep ?? mkdtempSync(join(tmpdir(), 'ttlstream-bench-scale-'));
  const fs = [];
  for (const format of (values.formats as string).split(',') as DataFormat[])
    fs.push(await fsRun(format, root));
  const memory = await probe(root);
  const s3 = values['skip-s3'] ? null : await s3Run();
  load.push(loadavg()[0] as number);
  printReport(fs, memory, s3, load);
  if (values.keep === undefined) rmSync(root, { recursive: true, force: true });
}

type FsRun = Awaited<ReturnType<typeof fsRun>>;
type Measured = FsRun['before'];

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const mib = (b: number): string => `${(b / 1024 / 1024).toFixed(2)} MiB`;

function describe(label: string, m: Measured): string[] {
  const files = median(m.days.map((d) => d.files));
  const size = median(m.days.map((d) => d.medianBytes));
  const e = m.erase.counts as NonNullable<Step['counts']>;
  return [
    `  ${label}: ${files} data files per day (median), median file ${(size / 1024).toFixed(1)} KiB`,
    `    archive query (deletions per day, all days): ${m.query.seconds.toFixed(2)} s${m.query.scopeDays < m.days.length ? ` (measured over ${m.query.scopeDays} day(s), scaled to ${m.days.length})` : ''}`,
    `    archive erase (one key in 3 files): ${e.objectsRead} objects read (ideal ${m.erase.ideal}, ${(e.objectsRead / m.erase.ideal).toFixed(2)}×), ${mib(e.bytesRead)}, ${e.requests} requests (${e.gets} GETs, ${e.listRequests} LISTs), ${m.erase.seconds.toFixed(2)} s`,
    `    archive verify: ${m.verify.seconds.toFixed(1)} s`,
  ];
}

function printReport(
  fs: FsRun[],
  memory: Awaited<ReturnType<typeof probe>>,
  s3: Awaited<ReturnType<typeof s3Run>> | null,
  load: number[],
): void {
  const lines: string[] = [''];
  const summary: Record<string, unknown> = {};
  for (const r of fs) {
    const speedup = r.before.query.seconds / r.after.query.seconds;
    const rate = r.compacted.rows / r.compacted.seconds;
    const raw = r.raw.rows / r.raw.seconds;
    const afterErase = r.after.erase.counts?.objectsRead ?? NaN;
    lines.push(
      `${r.format} on a file system: ${r.records.toLocaleString('en-US')} records, ${r.days} days × 24 h × ${r.partitions} partitions, generated in ${r.generateS.toFixed(0)} s`,
      ...describe('before', r.before),
      ...describe('after', r.after),
      `  query after is ${speedup.toFixed(1)}× faster (target ≥ 5); erase after reads ${(afterErase / r.after.erase.ideal).toFixed(2)}× the ideal (target ≤ 2)`,
      `  compaction: ${rate.toFixed(0)} records/s (${r.compacted.files} files in ${r.compacted.seconds.toFixed(1)} s, ${r.compacted.cpuS.toFixed(1)} CPU s, peak RSS ${r.compacted.peakRssMB.toFixed(0)} MB); raw read-and-rewrite ${raw.toFixed(0)} records/s (peak RSS ${r.raw.peakRssMB.toFixed(0)} MB): ratio ${(rate / raw).toFixed(2)} (target ≥ 0.7)`,
      '',
    );
    summary[r.format] = {
      ...r,
      querySpeedup: speedup,
      eraseOverIdeal: afterErase / r.after.erase.ideal,
      compactRecordsPerS: rate,
      rawRecordsPerS: raw,
      compactOverRaw: rate / raw,
    };
  }
  lines.push(
    `memory probe: one hour of ${memory.rows.toLocaleString('en-US')} rows (Parquet, 6 partitions × 60 rolls)`,
  );
  for (const m of memory.runs)
    lines.push(
      `  target ${m.targetMiB} MiB: ${m.seconds?.toFixed(1)} s, peak RSS ${m.peakRssMB?.toFixed(0)} MB`,
    );
  if (s3) {
    lines.push(
      '',
      `S3 (moto): ${s3.records.toLocaleString('en-US')} records, ${s3.days} days × ${s3.partitions} partitions, generated in ${s3.generateS.toFixed(0)} s`,
    );
    lines.push(...describe('before', s3.before), ...describe('after', s3.after));
    for (const [name, m] of [
      ['before', s3.before],
      ['after', s3.after],
    ] as const)
      lines.push(
        `  ${name}: S3 requests: query ${m.query.counts?.requests}, erase ${m.erase.counts?.requests}, verify ${m.verify.counts?.requests}`,
      );
    lines.push(
      `  compaction: ${s3.compaction.counts.requests} S3 requests (${s3.compaction.counts.gets} GETs, ${s3.compaction.counts.puts} PUTs, ${s3.compaction.counts.deletes} DELETEs, ${s3.compaction.counts.moves} copies), ${s3.compaction.seconds.toFixed(1)} s`,
    );
  }
  lines.push(`load average (1 min) at start ${load[0]?.toFixed(2)}, at end ${load[1]?.toFixed(2)}`, '');
  console.log(lines.join('\n'));
  console.log(
    JSON.stringify({
      bench: 'archive-scale',
      fs: summary,
      memory,
      s3,
      loadAverage: { start: load[0], end: load[1] },
      node: process.version,
    }),
  );
}

(values.phase === 'main' ? main() : childPhase()).then(
  () => exitAfterOutput(0),
  (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    exitAfterOutput(1);
  },
);
