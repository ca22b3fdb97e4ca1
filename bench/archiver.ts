/**
 * Archiver throughput beside the raw limit, in one run (`bash bench/run.sh archiver [-- --records N]`):
 *   1. produce N REMOVE records of about 1.2 KB to a fresh topic;
 *   2. raw: a kafkajs consumer group that only counts those records (the same fetch settings as
 *      the archiver), from its first batch to its last record;
 *   3. the archiver writing each data-file format (archive.format avro, then parquet; `--formats`, where
 *      `parquet:N` is Parquet at zstd level N, archive.parquetZstdLevel; `avro:N` Avro at deflate level N,
 *      archive.avroDeflateLevel) to a
 *      file-system archive, `--rounds` times in alternating order, then to an S3 archive (moto), each in a fresh
 *      group, from its first batch until everything is rolled, durably written and committed.
 * Prints a table and one JSON line: records/s and the ratio to the raw rate (Avro targets: ≥ 0.40 to a file system,
 * ≥ 0.30 to S3), CPU µs per record (all threads, and its main thread's, V8 workers' and libuv pool's parts) and, for
 * Avro, against its floor (the raw consume plus deflating the same bytes; target ≤ 2×), data-file bytes per record
 * on disk, and Parquet ÷ Avro (target ≥ 0.8).
 *
 * The machine is shared and its load changes from second to second, so the raw rate is measured
 * right before and right after each archiver run (each a full read of the topic from the start by
 * a fresh group, like the archiver's) and each archiver run is compared with the mean of the two
 * around it; Parquet ÷ Avro compares the two formats' ratios to raw, round by round.
 */
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import type { Admin, Consumer, ConsumerConfig, Kafka } from 'kafkajs';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import zlib from 'node:zlib';
import { setTimeout as sleep } from 'node:timers/promises';
import { archiverOptionsFrom, startArchiver } from '../archiver';
import { openArchiveStorage, type ArchiveStorage, type DataFormat } from '../archive/storage';
import { DATA_BLOCK_BYTES } from '../archive/format';
import { settingsOnFirstRead } from '../control/settings-store';
import { createKafka, createS3Client } from '../core/clients';
import { loadConfig, parseConfig, type TtlstreamConfig } from '../core/config';
import { silentLogger } from '../core/logger';
import { metrics } from '../core/metrics';
import { removeMessage } from '../test/support/archive-fixture';
import { machineBusySeconds, processCpuSeconds, stackServicePid, threadCpuSeconds } from './proc-cpu';
import { startProfile } from './profile';
import { benchRecord, type PayloadKind } from './records';
import { exitAfterOutput } from '../core/exit';

type FormatSpec = 'avro' | `avro:${number}` | 'parquet' | `parquet:${number}`;

/** archive.format and archive.avroDeflateLevel or archive.parquetZstdLevel of a format spec. */
function archiveSettingsOf(spec: FormatSpec): {
  format: DataFormat;
  avroDeflateLevel?: number;
  parquetZstdLevel?: number;
} {
  const [format, level] = spec.split(':');
  if (!level) return { format: format as DataFormat };
  return format === 'avro'
    ? { format: 'avro', avroDeflateLevel: Number(level) }
    : { format: 'parquet', parquetZstdLevel: Number(level) };
}

/** The deflate level of an Avro format spec (archive.avroDeflateLevel's default without one); null for Parquet. */
function deflateLevelOf(spec: FormatSpec): number | null {
  const s = archiveSettingsOf(spec);
  return s.format === 'avro' ? (s.avroDeflateLevel ?? DEFAULT_DEFLATE_LEVEL) : null;
}
const DEFAULT_DEFLATE_LEVEL = parseConfig({}).archive.avroDeflateLevel;

interface Args {
  records: number;
  partitions: number;
  payloadBytes: number;
  rollBytes: number;
  rollMs: number;
  skipS3: boolean;
  /** The formats compared, in the first round's order: avro, parquet, or parquet:<zstd level>. */
  formats: FormatSpec[];
  /** File-system rounds (each format once per round). */
  rounds: number;
  /** `words`: the payload is text (compresses like real attributes); `repeat`: one character repeated (earlier runs). */
  payloadKind: PayloadKind;
  /** options.dedupWindow per partition worker; unset: the archiver's default (100,000). */
  dedupWindow: number | undefined;
  /** Archive the topic once (and consume it raw once) before the measured runs, not reported. */
  warmup: boolean;
}

function parseArgs(argv: string[]): Args {
  const out: Args = {
    records: 100_000,
    partitions: 6,
    payloadBytes: 800,
    rollBytes: 2 * 1024 * 1024,
    rollMs: 5000,
    skipS3: false,
    formats: ['avro', 'parquet'],
    rounds: 2,
    payloadKind: 'words',
    dedupWindow: undefined,
    warmup: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = (): number => {
      const v = Number(argv[++i]);
      if (!Number.isFinite(v) || v <= 0) throw new Error(`${a} needs a positive number`);
      return v;
    };
    if (a === '--records') out.records = next();
    else if (a === '--partitions') out.partitions = next();
    else if (a === '--payload-bytes') out.payloadBytes = next();
    else if (a === '--roll-bytes') out.rollBytes = next();
    else if (a === '--roll-ms') out.rollMs = next();
    else if (a === '--skip-s3') out.skipS3 = true;
    else if (a === '--dedup-window') out.dedupWindow = next();
    else if (a === '--rounds') out.rounds = next();
    else if (a === '--warmup') out.warmup = true;
    else if (a === '--formats') {
      const list = (argv[++i] ?? '').split(',');
      if (!list.every((f): f is FormatSpec => /^(avro|parquet)(:\d+)?$/.test(f)))
        throw new Error(
          '--formats takes avro, avro:<deflate level>, parquet or parquet:<zstd level>, comma-separated',
        );
      out.formats = list;
    } else if (a === '--payload') {
      const kind = argv[++i];
      if (kind !== 'words' && kind !== 'repeat') throw new Error('--payload takes words or repeat');
      out.payloadKind = kind;
    } else
      throw new Error(
        `unknown argument ${a} (known: --records --partitions --payload-bytes --payload words|repeat --roll-bytes --roll-ms --formats --rounds --skip-s3 --dedup-window --warmup)`,
      );
  }
  return out;
}

/** Fetch settings shared by the raw consumer and the archiver, so the raw rate is the limit the archiver runs under. */
const FETCH = {
  maxBytesPerPartition: 4 * 1024 * 1024,
  maxBytes: 32 * 1024 * 1024,
  partitionsConsumedConcurrently: 4,
};

interface Measured {
  records: number;
  seconds: number;
  /** CPU seconds (user + system) of this process over the same span. */
  cpuSeconds: number;
  /** The part of cpuSeconds spent on the main thread (null where /proc is not available). */
  mainCpuSeconds: number | null;
  /** The parts spent by V8's workers (concurrent GC, optimising compiler) and by libuv's pool (deflate, files). */
  v8CpuSeconds: number | null;
  libuvCpuSeconds: number | null;
  /** The broker's CPU seconds over the same span (null when its pid is unknown). */
  brokerCpuSeconds: number | null;
  /** The whole machine's busy CPU seconds over the same span (every process; other users' too). */
  machineCpuSeconds: number | null;
  inputBytes: number;
  archiveBytes?: number;
  /** Bytes of the data files alone (.avro / .parquet), on a file-system archive. */
  dataBytes?: number;
  /** The data files, on a file-system archive. */
  dataFiles?: number;
}

/**
 * The deletion time of record j of n, in seconds after the run's base: rising with j over two hours, as a stream's
 * REMOVEs do (each is published right after its deletion, so offsets follow deletion times). A roll's rows then fall
 * in one UTC hour or two, and its files hold about half a roll each (two tables): the file sizes a deployment's
 * burst gets. Deletion times cycling within the two hours instead cut every roll into 4–6 small files.
 */
function deletionSecond(j: number, n: number): number {
  return Math.floor((j * 7200) / n);
}

async function produce(
  kafka: Kafka,
  topic: string,
  n: number,
  payloadBytes: number,
  kind: PayloadKind,
): Promise<{ bytes: number; seconds: number }> {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const base = Math.floor(Date.now() / 1000) - 3600;
  let bytes = 0;
  const t0 = performance.now();
  const chunk = 1000;
  const inFlight: Promise<unknown>[] = [];
  for (let i = 0; i < n; i += chunk) {
    const messages = [];
    for (let j = i; j < Math.min(n, i + chunk); j++) {
      const { table, record } = benchRecord(j, base + deletionSecond(j, n), payloadBytes, kind);
      const m = removeMessage(record, table);
      bytes += (m.value as Buffer).length;
      messages.push(m);
    }
    inFlight.push(producer.send({ topic, acks: -1, messages }));
    if (inFlight.length >= 4) await inFlight.shift();
  }
  await Promise.all(inFlight);
  const seconds = (performance.now() - t0) / 1000;
  await producer.disconnect();
  return { bytes, seconds };
}

/**
 * CPU time of this process (all threads) and of its main thread alone: the main thread runs
 * kafkajs and the archiver's JavaScript; the rest is V8's GC and compiler threads and libuv's pool
 * (deflate, file I/O). Which of the two is the limit decides what to optimise.
 */
interface CpuSample {
  total: NodeJS.CpuUsage;
  mainTicks: number | null;
  threads: ReturnType<typeof threadCpuSeconds>;
  /** The broker's CPU seconds (the local stack's Kafka, when this checkout started it). */
  broker: number | null;
  /** Busy CPU seconds of the whole machine. */
  machine: number | null;
}
/** Linux: utime + stime of the main thread in clock ticks (USER_HZ, 100 on Linux), or null elsewhere. */
function mainThreadTicks(): number | null {
  const s = processCpuSeconds(process.pid, process.pid);
  return s === null ? null : Math.round(s * 100);
}
const BROKER_PID = stackServicePid('kafka');
const cpuSample = (): CpuSample => ({
  total: process.cpuUsage(),
  mainTicks: mainThreadTicks(),
  threads: threadCpuSeconds(process.pid),
  broker: BROKER_PID === null ? null : processCpuSeconds(BROKER_PID),
  machine: machineBusySeconds(),
});
const diff = (a: number | null, b: number | null): number | null => (a === null || b === null ? null : b - a);
function cpuSince(
  start: CpuSample,
): Pick<
  Measured,
  | 'cpuSeconds'
  | 'mainCpuSeconds'
  | 'v8CpuSeconds'
  | 'libuvCpuSeconds'
  | 'brokerCpuSeconds'
  | 'machineCpuSeconds'
> {
  const u = process.cpuUsage(start.total);
  const now = cpuSample();
  const main = diff(start.mainTicks, now.mainTicks);
  return {
    cpuSeconds: (u.user + u.system) / 1e6,
    mainCpuSeconds: main === null ? null : main / 100,
    v8CpuSeconds: start.threads && now.threads ? now.threads.v8 - start.threads.v8 : null,
    libuvCpuSeconds: start.threads && now.threads ? now.threads.libuv - start.threads.libuv : null,
    brokerCpuSeconds: diff(start.broker, now.broker),
    machineCpuSeconds: diff(start.machine, now.machine),
  };
}

/**
 * CPU seconds of deflating `values` (the records' bytes) in blocks of the archiver's size at zlib's default level,
 * as the archiver's container writer does: the part of an archiver's cost no implementation of the deflate codec
 * avoids, measured beside the raw consume.
 */
function deflateCpuSeconds(values: readonly Buffer[], blockBytes: number, level: number): number {
  const t0 = process.cpuUsage();
  let block: Buffer[] = [];
  let size = 0;
  for (const v of values) {
    block.push(v);
    size += v.length;
    if (size >= blockBytes) {
      zlib.deflateRawSync(Buffer.concat(block), { level });
      block = [];
      size = 0;
    }
  }
  if (size > 0) zlib.deflateRawSync(Buffer.concat(block), { level });
  const u = process.cpuUsage(t0);
  return (u.user + u.system) / 1e6;
}

async function rawConsume(kafka: Kafka, topic: string, n: number): Promise<Measured> {
  const consumer = kafka.consumer({
    groupId: `bench-raw-${randomBytes(4).toString('hex')}`,
    ...FETCH,
    maxWaitTimeInMs: 1000,
  });
  let count = 0;
  let bytes = 0;
  let first = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  let cpu0 = cpuSample();
  await consumer.run({
    autoCommit: false,
    partitionsConsumedConcurrently: FETCH.partitionsConsumedConcurrently,
    eachBatch: async ({ batch }) => {
      if (first === 0) {
        first = performance.now();
        cpu0 = cpuSample();
      }
      for (const m of batch.messages) bytes += m.value?.length ?? 0;
      count += batch.messages.length;
      if (count >= n) done();
    },
  });
  await finished;
  const seconds = (performance.now() - first) / 1000;
  const cpu = cpuSince(cpu0);
  await consumer.disconnect();
  return { records: count, seconds, ...cpu, inputBytes: bytes };
}

/** Wrap kafka.consumer so the bench sees the archiver's batches (first batch time, progress). */
function instrument(
  kafka: Kafka,
  onBatch: (e: { topic: string; partition: number; lastOffset: string }) => void,
): Kafka {
  const original = kafka.consumer.bind(kafka);
  const wrapped = Object.create(kafka) as Kafka;
  wrapped.consumer = (config: ConsumerConfig): Consumer => {
    const c = original(config);
    c.on(c.events.END_BATCH_PROCESS, (e) => onBatch(e.payload));
    return c;
  };
  return wrapped;
}

async function archive(
  config: TtlstreamConfig,
  kafka: Kafka,
  admin: Admin,
  storage: ArchiveStorage,
  topic: string,
  high: Map<number, bigint>,
  inputBytes: number,
  dedupWindow: number | undefined,
  profile = true,
): Promise<Measured> {
  let first = 0;
  const seen = new Map<number, bigint>();
  const bytesBefore = (await metrics.archiveBytes.get()).values.reduce((s, v) => s + v.value, 0);
  const recordsBefore = (await metrics.archiveRecords.get()).values
    .filter((v) => v.labels.topic === topic)
    .reduce((s, v) => s + v.value, 0);
  let cpu0 = cpuSample();
  const k = instrument(kafka, (e) => {
    if (first === 0) {
      first = performance.now();
      cpu0 = cpuSample();
    }
    if (e.topic === topic) seen.set(e.partition, BigInt(e.lastOffset) + 1n);
  });
  const profiler = profile ? await startProfile() : null;
  const settings = settingsOnFirstRead(config);
  const archiver = await startArchiver({
    options: archiverOptionsFrom(config, {
      ...FETCH,
      monitorIntervalMs: 60_000,
      ...(dedupWindow ? { dedupWindow } : {}),
      // BENCH_ARCHIVER_OPTIONS='{"maxQueuedRolls":4}': the archiver's tuning (archiver/group/defaults.ts) to try.
      ...(JSON.parse(process.env.BENCH_ARCHIVER_OPTIONS ?? '{}') as object),
    }),
    kafka: k,
    storage,
    logger: silentLogger,
    settings,
  });
  // Everything fetched; then the graceful stop rolls what is buffered. The run ends when every
  // partition's committed offset reached the end: commits follow the durable writes.
  while (![...high].every(([p, h]) => (seen.get(p) ?? 0n) >= h)) await sleep(20);
  const consumedAt = performance.now();
  const stopping = archiver.stop();
  const groupId = config.archive.groupId;
  for (;;) {
    const committed = (await admin.fetchOffsets({ groupId, topics: [topic] }))[0]?.partitions ?? [];
    if ([...high].every(([p, h]) => committed.find((c) => c.partition === p)?.offset === h.toString())) break;
    await sleep(25);
  }
  const seconds = (performance.now() - first) / 1000;
  const cpu = cpuSince(cpu0);
  console.log(
    `  ${storage.kind} ${config.archive.format}: consumed in ${fmt((consumedAt - first) / 1000, 2)} s, last rolls durable and committed ${fmt((performance.now() - consumedAt) / 1000, 2)} s later`,
  );
  await stopping;
  settings.destroy();
  await profiler?.stop(`archiver-${storage.kind}-${config.archive.format}`);
  const records =
    (await metrics.archiveRecords.get()).values
      .filter((v) => v.labels.topic === topic)
      .reduce((s, v) => s + v.value, 0) - recordsBefore;
  const archiveBytes =
    (await metrics.archiveBytes.get()).values.reduce((s, v) => s + v.value, 0) - bytesBefore;
  return { records, seconds, ...cpu, inputBytes, archiveBytes };
}

function fmt(n: number, digits = 0): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

/** The data files (.avro, .parquet) under a file-system archive: how many, and their bytes. */
function dataFilesOf(dir: string): { files: number; bytes: number } {
  let bytes = 0;
  let files = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true }))
    if (e.isFile() && /\.(avro|parquet)$/.test(e.name)) {
      files++;
      bytes += statSync(join(e.parentPath, e.name)).size;
    }
  return { files, bytes };
}

interface Run {
  label: string;
  sink: 'fs' | 's3';
  format: FormatSpec;
  round: number;
  m: Measured;
  /** Mean records/s of the raw runs right before and after it. */
  rawAround: number;
}

const perRecordUs = (seconds: number | null, records: number): number | null =>
  seconds === null ? null : (seconds * 1e6) / records;

function printRuns(rawRuns: Measured[], runs: Run[]): void {
  const rate = (m: Measured): number => m.records / m.seconds;
  console.log('');
  console.log(
    `${'run'.padEnd(32)} ${'records/s'.padStart(10)} ${'vs raw'.padStart(7)} ${'CPU µs/rec'.padStart(10)} ${'main µs'.padStart(8)} ${'V8 µs'.padStart(6)} ${'libuv µs'.padStart(8)} ${'broker µs'.padStart(9)} ${'machine µs'.padStart(10)} ${'others µs'.padStart(9)} ${'data B/rec'.padStart(10)} ${'all B/rec'.padStart(9)} ${'rows/file'.padStart(9)}`,
  );
  const line = (label: string, m: Measured, against: number | null): void => {
    const us = (x: number | null): string => (x === null ? '-' : fmt(perRecordUs(x, m.records) ?? 0, 1));
    console.log(
      `${label.padEnd(32)} ${fmt(rate(m)).padStart(10)} ${(against === null ? '' : `${fmt((100 * rate(m)) / against)}%`).padStart(7)} ${us(m.cpuSeconds).padStart(10)} ${us(m.mainCpuSeconds).padStart(8)} ${us(m.v8CpuSeconds).padStart(6)} ${us(m.libuvCpuSeconds).padStart(8)} ${us(m.brokerCpuSeconds).padStart(9)} ${us(m.machineCpuSeconds).padStart(10)} ${us(othersCpuSeconds(m)).padStart(9)} ${(m.dataBytes === undefined ? '-' : fmt(m.dataBytes / m.records, 1)).padStart(10)} ${(m.archiveBytes === undefined ? '-' : fmt(m.archiveBytes / m.records, 1)).padStart(9)} ${(m.dataFiles === undefined ? '-' : fmt(m.records / m.dataFiles)).padStart(9)}`,
    );
  };
  rawRuns.forEach((m, i) => line(`raw kafkajs consume #${i + 1}`, m, null));
  for (const r of runs) line(r.label, r.m, r.rawAround);
  console.log(
    '("vs raw": against the mean of the raw runs right before and after it; CPU µs per record: this process (all threads), its main thread, the V8 workers (GC, compiler), the libuv pool (deflate, files; the Parquet encoding threads are in neither), the Kafka broker, the whole machine, every other process on it (a run is quiet when they took at most a tenth of the busy CPU of the machine); "data B/rec": the data files on disk, "all": every archive object written, key indexes and manifests included; "rows/file": records per data file)',
  );
}

/**
 * CPU seconds of every other process on the machine over a run (the machine's busy time less this process's and the
 * broker's), or null where /proc is not available: the machine is shared, and a run that others took CPU from is
 * slower for it.
 */
function othersCpuSeconds(m: Measured): number | null {
  if (m.machineCpuSeconds === null || m.brokerCpuSeconds === null) return null;
  return Math.max(0, m.machineCpuSeconds - m.cpuSeconds - m.brokerCpuSeconds);
}

/** A run others took at most a tenth of the machine's busy CPU from. */
const QUIET_SHARE = 0.1;
function isQuiet(m: Measured): boolean {
  const others = othersCpuSeconds(m);
  return others !== null && m.machineCpuSeconds !== null && others <= QUIET_SHARE * m.machineCpuSeconds;
}

/**
 * Parquet ÷ Avro over the quiet file-system runs alone: their records/s compared directly (the same topic, the same
 * stack), and their CPU per record, which others' load moves little. Null where a format has no quiet run.
 */
function quietRatios(runs: Run[]): Record<string, { rate: number | null; cpu: number; quietRuns: string }> {
  const fs = runs.filter((r) => r.sink === 'fs');
  const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const avro = fs.filter((r) => r.format === 'avro');
  const quietAvro = avro.filter((r) => isQuiet(r.m));
  const out: Record<string, { rate: number | null; cpu: number; quietRuns: string }> = {};
  for (const spec of new Set(fs.filter((r) => r.format.startsWith('parquet')).map((r) => r.format))) {
    const parquet = fs.filter((r) => r.format === spec);
    const quietParquet = parquet.filter((r) => isQuiet(r.m));
    const rate = (xs: Run[]): number => mean(xs.map((r) => r.m.records / r.m.seconds));
    const cpu = (xs: Run[]): number => mean(xs.map((r) => r.m.cpuSeconds / r.m.records));
    out[spec] = {
      rate: quietAvro.length && quietParquet.length ? rate(quietParquet) / rate(quietAvro) : null,
      cpu: cpu(avro) / cpu(parquet),
      quietRuns: `avro ${quietAvro.length} of ${avro.length}, ${spec} ${quietParquet.length} of ${parquet.length}`,
    };
  }
  return out;
}

/** Parquet ÷ Avro: each Parquet run's ratio to raw against the same round's Avro run's. */
function formatRatios(runs: Run[]): Array<{ sink: string; format: string; round: number; ratio: number }> {
  const out: Array<{ sink: string; format: string; round: number; ratio: number }> = [];
  for (const p of runs.filter((r) => r.format.startsWith('parquet'))) {
    const a = runs.find((r) => r.format === 'avro' && r.sink === p.sink && r.round === p.round);
    if (!a) continue;
    const vsRaw = (r: Run): number => r.m.records / r.m.seconds / r.rawAround;
    out.push({ sink: p.sink, format: p.format, round: p.round, ratio: vsRaw(p) / vsRaw(a) });
  }
  return out;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const loadStart = loadavg()[0] as number;
  const id = `bench-arch-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
  const base = loadConfig({ overrides: { log: { level: 'silent' } } });
  const kafka = createKafka(base);
  const admin = kafka.admin();
  await admin.connect();
  const topic = `${id}.shared`;
  await admin.createTopics({
    topics: [{ topic, numPartitions: args.partitions, replicationFactor: 1 }],
    waitForLeaders: true,
  });

  const produced = await produce(kafka, topic, args.records, args.payloadBytes, args.payloadKind);
  // Deflate alone, on 20k records like these (scaled to the run), at zlib's default level and at each Avro level the
  // run writes: what the deflate codec costs any Avro archiver.
  const sample: Buffer[] = [];
  const sampleBase = Math.floor(Date.now() / 1000) - 3600;
  for (let j = 0; j < 20_000; j++) {
    const { table, record } = benchRecord(
      j,
      sampleBase + deletionSecond(j, 20_000),
      args.payloadBytes,
      args.payloadKind,
    );
    sample.push(removeMessage(record, table).value as Buffer);
  }
  // Level 6 too: zlib's default, what "deflate alone" meant before archive.avroDeflateLevel.
  const deflateLevels = new Set([6, ...args.formats.flatMap((f) => deflateLevelOf(f) ?? [])]);
  const deflateByLevel = new Map(
    [...deflateLevels].map((level) => [
      level,
      (deflateCpuSeconds(sample, DATA_BLOCK_BYTES, level) * args.records) / sample.length,
    ]),
  );
  const deflateSeconds = deflateByLevel.get(6) as number;
  sample.length = 0;
  const high = new Map((await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, BigInt(o.high)]));
  const avg = produced.bytes / args.records;
  console.log(
    `produced ${fmt(args.records)} records (avg ${fmt(avg)} B, ${fmt(produced.bytes / 1e6, 1)} MB, payload ${args.payloadKind}) in ${fmt(produced.seconds, 1)} s to ${args.partitions} partitions`,
  );

  const configFor = (url: string, group: string, format: FormatSpec): TtlstreamConfig =>
    loadConfig({
      overrides: {
        log: { level: 'silent' },
        topics: { shared: topic, perTablePrefix: `${id}.t.`, deadLetter: `${id}.dlq` },
        archive: {
          url,
          groupId: group,
          rollBytes: args.rollBytes,
          rollMs: args.rollMs,
          ...archiveSettingsOf(format),
        },
      },
    });
  if (args.warmup) {
    // Not reported: the first pass over the archiver's code compiles it (V8's optimising compiler runs on its own
    // threads, counted in whichever run comes first); a long-running archiver pays that once.
    const dir = mkdtempSync(join(tmpdir(), 'ttlstream-bench-warmup-'));
    const config = configFor(`file://${dir}`, `${id}-warmup`, args.formats[0] ?? 'avro');
    const warm = await archive(
      config,
      kafka,
      admin,
      openArchiveStorage(config),
      topic,
      high,
      produced.bytes,
      args.dedupWindow,
      false,
    );
    rmSync(dir, { recursive: true, force: true });
    await rawConsume(kafka, topic, args.records);
    console.log(`warm-up (not reported): ${fmt(warm.records / warm.seconds)} records/s`);
  }
  const rawRuns: Measured[] = [await rawConsume(kafka, topic, args.records)];
  const runs: Run[] = [];
  const rawMean = (): number => {
    const [a, b] = rawRuns.slice(-2);
    return (
      ((a as Measured).records / (a as Measured).seconds +
        (b as Measured).records / (b as Measured).seconds) /
      2
    );
  };
  const s3 = args.skipS3 ? null : createS3Client(base);
  const plan: Array<{ sink: 'fs' | 's3'; format: FormatSpec; round: number }> = [];
  for (let round = 0; round < args.rounds; round++)
    for (const format of round % 2 === 0 ? args.formats : [...args.formats].reverse())
      plan.push({ sink: 'fs', format, round });
  if (s3) for (const format of args.formats) plan.push({ sink: 's3', format, round: 0 });
  for (const [n, step] of plan.entries()) {
    const group = `${id}-${step.sink}-${step.format.replace(':', '')}-${n}`;
    let m: Measured;
    if (step.sink === 'fs') {
      const dir = mkdtempSync(join(tmpdir(), 'ttlstream-bench-archive-'));
      const config = configFor(`file://${dir}`, group, step.format);
      m = await archive(
        config,
        kafka,
        admin,
        openArchiveStorage(config),
        topic,
        high,
        produced.bytes,
        args.dedupWindow,
      );
      const data = dataFilesOf(dir);
      m.dataBytes = data.bytes;
      m.dataFiles = data.files;
      rmSync(dir, { recursive: true, force: true });
    } else {
      const bucket = `${id}-${n}`;
      await (s3 as NonNullable<typeof s3>).send(new CreateBucketCommand({ Bucket: bucket }));
      const config = configFor(`s3://${bucket}/bench`, group, step.format);
      m = await archive(
        config,
        kafka,
        admin,
        openArchiveStorage(config, s3 ?? undefined),
        topic,
        high,
        produced.bytes,
        args.dedupWindow,
      );
    }
    rawRuns.push(await rawConsume(kafka, topic, args.records));
    const label = `archiver ${step.format} → ${step.sink === 'fs' ? 'file system' : 'S3 (moto)'}${step.sink === 'fs' ? ` #${step.round + 1}` : ''}`;
    runs.push({ label, ...step, m, rawAround: rawMean() });
  }
  await admin.deleteTopics({ topics: [topic, `${id}.dlq`] }).catch(() => undefined);
  await admin.disconnect();

  printRuns(rawRuns, runs);
  const ratios = formatRatios(runs);
  // Per Parquet variant, the mean of its file-system rounds' ratios to Avro.
  const meanFs: Record<string, number> = {};
  for (const spec of new Set(ratios.map((r) => r.format))) {
    const xs = ratios.filter((r) => r.sink === 'fs' && r.format === spec).map((r) => r.ratio);
    meanFs[spec] = xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  }
  console.log(
    `Parquet ÷ Avro records/s (each against its raw runs): ${ratios.map((r) => `${r.format} ${r.sink}${r.sink === 'fs' ? ` #${r.round + 1}` : ''} ${fmt(r.ratio, 2)}`).join(', ')}; file-system means ${Object.entries(
      meanFs,
    )
      .map(([k, v]) => `${k} ${fmt(v, 2)}`)
      .join(', ')} (target ≥ 0.8)`,
  );
  const quiet = quietRatios(runs);
  for (const [spec, q] of Object.entries(quiet))
    console.log(
      `${spec} ÷ avro, quiet file-system runs (${q.quietRuns}): records/s ${q.rate === null ? '-' : fmt(q.rate, 2)}; CPU per record, avro ÷ ${spec} over every file-system run: ${fmt(q.cpu, 2)}`,
    );
  const rawCpuMean = rawRuns.reduce((a, m) => a + m.cpuSeconds, 0) / rawRuns.length;
  // The floor of an Avro archiver: consuming the records and deflating their bytes at its level, which none avoids.
  const floorAt = (level: number): number => rawCpuMean + (deflateByLevel.get(level) as number);
  const avroToFloor = runs.flatMap((r) => {
    const level = deflateLevelOf(r.format);
    return level === null
      ? []
      : [{ sink: r.sink, format: r.format, round: r.round, ratio: r.m.cpuSeconds / floorAt(level) }];
  });
  const us = (seconds: number): string => fmt(perRecordUs(seconds, args.records) ?? 0, 1);
  console.log(
    `CPU µs per record: raw consume ${us(rawCpuMean)} (mean) + deflate of the same bytes alone ${[...deflateByLevel].map(([level, x]) => `${us(x)} (level ${level})`).join(', ')} = the floor of an Avro archiver ${[...deflateByLevel.keys()].map((level) => `${us(floorAt(level))} (level ${level})`).join(', ')}; Avro runs ÷ their floor: ${avroToFloor.map((f) => `${f.format} ${f.sink}${f.sink === 'fs' ? ` #${f.round + 1}` : ''} ${fmt(f.ratio, 2)}`).join(', ')} (target ≤ 2)`,
  );
  const loadEnd = loadavg()[0] as number;
  console.log(`load average (1 min) at start ${fmt(loadStart, 2)}, at end ${fmt(loadEnd, 2)}`);
  console.log('');
  const figures = (m: Measured) => ({
    recordsPerSec: m.records / m.seconds,
    mbPerSec: m.inputBytes / 1e6 / m.seconds,
    cpuUsPerRecord: perRecordUs(m.cpuSeconds, m.records),
    mainCpuUsPerRecord: perRecordUs(m.mainCpuSeconds, m.records),
    v8CpuUsPerRecord: perRecordUs(m.v8CpuSeconds, m.records),
    libuvCpuUsPerRecord: perRecordUs(m.libuvCpuSeconds, m.records),
    brokerCpuUsPerRecord: perRecordUs(m.brokerCpuSeconds, m.records),
    machineCpuUsPerRecord: perRecordUs(m.machineCpuSeconds, m.records),
    othersCpuUsPerRecord: perRecordUs(othersCpuSeconds(m), m.records),
    dataBytesPerRecord: m.dataBytes === undefined ? null : m.dataBytes / m.records,
    archiveBytesPerRecord: m.archiveBytes === undefined ? null : m.archiveBytes / m.records,
    rowsPerDataFile: m.dataFiles === undefined ? null : m.records / m.dataFiles,
  });
  console.log(
    JSON.stringify({
      bench: 'archiver',
      records: args.records,
      avgRecordBytes: Math.round(avg),
      payload: args.payloadKind,
      partitions: args.partitions,
      rollBytes: args.rollBytes,
      rollMs: args.rollMs,
      dedupWindow: args.dedupWindow ?? null,
      raw: rawRuns.map(figures),
      runs: runs.map((r) => ({
        sink: r.sink,
        format: r.format,
        round: r.round,
        ...figures(r.m),
        rawAround: r.rawAround,
        ratio: r.m.records / r.m.seconds / r.rawAround,
      })),
      parquetOverAvro: ratios,
      parquetOverAvroFsMean: meanFs,
      parquetOverAvroQuiet: quiet,
      cpuFloor: {
        rawConsumeCpuUsPerRecord: perRecordUs(rawCpuMean, args.records),
        deflateCpuUsPerRecord: perRecordUs(deflateSeconds, args.records),
        deflateCpuUsPerRecordByLevel: Object.fromEntries(
          [...deflateByLevel].map(([level, x]) => [level, perRecordUs(x, args.records)]),
        ),
        avroToFloor,
      },
      target: { parquetOverAvro: 0.8, avroFsRatio: 0.4, avroS3Ratio: 0.3, avroToFloor: 2 },
      loadAverage: { start: loadStart, end: loadEnd },
    }),
  );
  const missing = runs.filter((r) => r.m.records !== args.records);
  if (missing.length > 0) {
    console.error(
      `bench: not every produced record was archived in ${missing.map((r) => r.label).join(', ')}`,
    );
    return exitAfterOutput(1);
  }
  exitAfterOutput(0);
}

main().catch((err: unknown) => {
  console.error(err);
  exitAfterOutput(1);
});
