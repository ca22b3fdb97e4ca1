/**
 * Archiver throughput beside the raw limit, in one run (`bash bench/run.sh archiver [-- --records N]`):
 *   1. produce N REMOVE records of about 1 KB to a fresh topic;
 *   2. raw: a kafkajs consumer group that only counts those records (the same fetch settings as
 *      the archiver), from its first batch to its last record;
 *   3. the archiver to a file-system archive and to an S3 archive (moto), each in a fresh group,
 *      from its first batch until everything is rolled, durably written and committed.
 * Prints a table and one JSON line with the ratios to the raw rate (targets: ≥ 0.40 to the file system, ≥ 0.30 to S3)
 * and the archiver's CPU per record against its floor, the raw consume plus deflating the same bytes (target ≤ 2×).
 *
 * The machine is shared and its load changes from second to second, so the raw rate is measured
 * right before and right after each archiver run (each a full read of the topic from the start by
 * a fresh group, like the archiver's) and each archiver run is compared with the mean of the two
 * around it. CPU seconds of this process per run are printed too: less sensitive to the load than
 * the wall clock (the Kafka broker's CPU is not in them).
 */
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import type { Admin, Consumer, ConsumerConfig, Kafka } from 'kafkajs';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import zlib from 'node:zlib';
import { setTimeout as sleep } from 'node:timers/promises';
import { startArchiver } from '../archiver';
import { openArchiveStorage, type ArchiveStorage } from '../archiver/storage';
import { DATA_BLOCK_BYTES } from '../archiver/writer';
import { createKafka, createS3Client } from '../core/clients';
import { loadConfig, type TtlstreamConfig } from '../core/config';
import { silentLogger } from '../core/logger';
import { metrics } from '../core/metrics';
import { makeRecord, removeMessage } from '../test/support/archive-fixture';
import { machineBusySeconds, processCpuSeconds, stackServicePid, threadCpuSeconds } from './proc-cpu';
import { startProfile } from './profile';

interface Args {
  records: number;
  partitions: number;
  payloadBytes: number;
  rollBytes: number;
  rollMs: number;
  skipS3: boolean;
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
    else if (a === '--warmup') out.warmup = true;
    else
      throw new Error(
        `unknown argument ${a} (known: --records --partitions --payload-bytes --roll-bytes --roll-ms --skip-s3 --dedup-window --warmup)`,
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
}

async function produce(
  kafka: Kafka,
  topic: string,
  n: number,
  payloadBytes: number,
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
      const table = j % 2 ? 'orders' : 'sessions';
      const m = removeMessage(makeRecord(table, j, base + (j % 7200), payloadBytes), table);
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
function deflateCpuSeconds(values: readonly Buffer[], blockBytes: number): number {
  const t0 = process.cpuUsage();
  let block: Buffer[] = [];
  let size = 0;
  for (const v of values) {
    block.push(v);
    size += v.length;
    if (size >= blockBytes) {
      zlib.deflateRawSync(Buffer.concat(block));
      block = [];
      size = 0;
    }
  }
  if (size > 0) zlib.deflateRawSync(Buffer.concat(block));
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
  const archiver = await startArchiver({
    config,
    kafka: k,
    storage,
    logger: silentLogger,
    options: { ...FETCH, monitorIntervalMs: 60_000, ...(dedupWindow ? { dedupWindow } : {}) },
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
    `  ${storage.kind}: consumed in ${fmt((consumedAt - first) / 1000, 2)} s, last rolls durable and committed ${fmt((performance.now() - consumedAt) / 1000, 2)} s later`,
  );
  await stopping;
  await profiler?.stop(`archiver-${storage.kind}`);
  const records =
    (await metrics.archiveRecords.get()).values
      .filter((v) => v.labels.topic === topic)
      .reduce((s, v) => s + v.value, 0) - recordsBefore;
  const archiveBytes =
    (await metrics.archiveBytes.get()).values.reduce((s, v) => s + v.value, 0) - bytesBefore;
  return { records, seconds, ...cpu, inputBytes, archiveBytes };
}

const opt = (n: number | null): string => (n === null ? '-' : fmt(n, 2));

function fmt(n: number, digits = 0): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
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

  const produced = await produce(kafka, topic, args.records, args.payloadBytes);
  // Deflate alone, on 20k records like these (scaled to the run): what the deflate codec costs any archiver.
  const sample: Buffer[] = [];
  const sampleBase = Math.floor(Date.now() / 1000) - 3600;
  for (let j = 0; j < 20_000; j++) {
    const table = j % 2 ? 'orders' : 'sessions';
    sample.push(
      removeMessage(makeRecord(table, j, sampleBase + (j % 7200), args.payloadBytes), table).value as Buffer,
    );
  }
  const deflateSeconds = (deflateCpuSeconds(sample, DATA_BLOCK_BYTES) * args.records) / sample.length;
  sample.length = 0;
  const high = new Map((await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, BigInt(o.high)]));
  const avg = produced.bytes / args.records;
  console.log(
    `produced ${fmt(args.records)} records (avg ${fmt(avg)} B, ${fmt(produced.bytes / 1e6, 1)} MB) in ${fmt(produced.seconds, 1)} s to ${args.partitions} partitions`,
  );

  const configFor = (url: string, group: string): TtlstreamConfig =>
    loadConfig({
      overrides: {
        log: { level: 'silent' },
        topics: { shared: topic, perTablePrefix: `${id}.t.`, deadLetter: `${id}.dlq` },
        archive: { url, groupId: group, rollBytes: args.rollBytes, rollMs: args.rollMs },
      },
    });
  if (args.warmup) {
    // Not reported: the first pass over the archiver's code compiles it (V8's optimising compiler runs on its own
    // threads, counted in the CPU of whichever run comes first); a long-running archiver pays that once.
    const dir = mkdtempSync(join(tmpdir(), 'ttlstream-bench-warmup-'));
    const warmConfig = configFor(`file://${dir}`, `${id}-warmup`);
    const warm = await archive(
      warmConfig,
      kafka,
      admin,
      openArchiveStorage(warmConfig),
      topic,
      high,
      produced.bytes,
      args.dedupWindow,
      false,
    );
    rmSync(dir, { recursive: true, force: true });
    await rawConsume(kafka, topic, args.records);
    console.log(
      `warm-up (not reported): the archiver → file system at ${fmt(warm.records / warm.seconds)} records/s, ${fmt(warm.cpuSeconds, 2)} CPU s`,
    );
  }
  const rawRuns: Measured[] = [await rawConsume(kafka, topic, args.records)];

  const dir = mkdtempSync(join(tmpdir(), 'ttlstream-bench-archive-'));
  const fsConfig = configFor(`file://${dir}`, `${id}-fs`);
  const fsResult = await archive(
    fsConfig,
    kafka,
    admin,
    openArchiveStorage(fsConfig),
    topic,
    high,
    produced.bytes,
    args.dedupWindow,
  );
  rmSync(dir, { recursive: true, force: true });
  rawRuns.push(await rawConsume(kafka, topic, args.records));

  let s3Result: Measured | null = null;
  if (!args.skipS3) {
    const bucket = id;
    const s3 = createS3Client(base);
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const s3Config = configFor(`s3://${bucket}/bench`, `${id}-s3`);
    s3Result = await archive(
      s3Config,
      kafka,
      admin,
      openArchiveStorage(s3Config, s3),
      topic,
      high,
      produced.bytes,
      args.dedupWindow,
    );
    rawRuns.push(await rawConsume(kafka, topic, args.records));
  }
  await admin.deleteTopics({ topics: [topic, `${id}.dlq`] }).catch(() => undefined);
  await admin.disconnect();

  const rate = (m: Measured): { recordsPerSec: number; mbPerSec: number } => ({
    recordsPerSec: m.records / m.seconds,
    mbPerSec: m.inputBytes / 1e6 / m.seconds,
  });
  // Each archiver run against the mean rate of the raw runs right before and after it.
  const rawAround = (i: number): number =>
    (rate(rawRuns[i] as Measured).recordsPerSec + rate(rawRuns[i + 1] as Measured).recordsPerSec) / 2;
  const fsRaw = rawAround(0);
  const s3Raw = s3Result ? rawAround(1) : null;
  const rows: Array<[string, Measured, number | null]> = [];
  rawRuns.forEach((m, i) => rows.push([`raw kafkajs consume #${i + 1}`, m, null]));
  rows.push(['archiver → file system', fsResult, fsRaw]);
  if (s3Result) rows.push(['archiver → S3 (moto)', s3Result, s3Raw]);
  console.log('');
  console.log(
    `${'run'.padEnd(30)} ${'records'.padStart(9)} ${'seconds'.padStart(8)} ${'records/s'.padStart(10)} ${'MB/s in'.padStart(8)} ${'CPU s'.padStart(6)} ${'main'.padStart(6)} ${'V8'.padStart(6)} ${'libuv'.padStart(6)} ${'broker'.padStart(6)} ${'machine'.padStart(7)} ${'archive MB'.padStart(10)} ${'vs raw'.padStart(7)}`,
  );
  for (const [label, m, against] of rows) {
    const r = rate(m);
    console.log(
      `${label.padEnd(30)} ${fmt(m.records).padStart(9)} ${fmt(m.seconds, 2).padStart(8)} ${fmt(r.recordsPerSec).padStart(10)} ${fmt(r.mbPerSec, 1).padStart(8)} ${fmt(m.cpuSeconds, 2).padStart(6)} ${opt(m.mainCpuSeconds).padStart(6)} ${opt(m.v8CpuSeconds).padStart(6)} ${opt(m.libuvCpuSeconds).padStart(6)} ${opt(m.brokerCpuSeconds).padStart(6)} ${opt(m.machineCpuSeconds).padStart(7)} ${(m.archiveBytes === undefined ? '-' : fmt(m.archiveBytes / 1e6, 1)).padStart(10)} ${(against === null ? '' : `${fmt((100 * r.recordsPerSec) / against)}%`).padStart(7)}`,
    );
  }
  console.log(
    '("vs raw": against the mean of the raw runs right before and after it; "CPU s": this process, "main" the part on its main thread, "V8" its GC and compiler threads, "libuv" its thread pool (deflate, files); "broker": the Kafka broker; "machine": every process)',
  );
  // What the deflate codec costs on top of the bare consume: the CPU no archiver writing deflated container files
  // avoids. On two vCPUs shared with the broker, it bounds the ratio any such archiver can reach.
  const rawMean = rawRuns.reduce((a, m) => a + m.cpuSeconds, 0) / rawRuns.length;
  const floorSeconds = rawMean + deflateSeconds;
  const floor = {
    rawConsumeCpuSeconds: rawMean,
    deflateCpuSeconds: deflateSeconds,
    consumePlusDeflateCpuSeconds: floorSeconds,
    fsArchiverCpuSeconds: fsResult.cpuSeconds,
    /** The archiver's CPU per record ÷ the floor's (target ≤ 2). */
    fsToFloor: fsResult.cpuSeconds / floorSeconds,
    s3ToFloor: s3Result ? s3Result.cpuSeconds / floorSeconds : null,
  };
  const us = (seconds: number): string => fmt((seconds * 1e6) / args.records, 1);
  console.log(
    `CPU µs per record: raw consume ${us(rawMean)} (mean) + deflate of the same bytes alone ${us(deflateSeconds)} = floor ${us(floorSeconds)}; the archiver → file system ${us(fsResult.cpuSeconds)} (${fmt(floor.fsToFloor, 2)} × floor)${s3Result ? `, → S3 ${us(s3Result.cpuSeconds)} (${fmt(floor.s3ToFloor ?? 0, 2)} × floor)` : ''}`,
  );
  const loadEnd = loadavg()[0] as number;
  const summary = {
    bench: 'archiver',
    records: args.records,
    avgRecordBytes: Math.round(avg),
    partitions: args.partitions,
    rollBytes: args.rollBytes,
    rollMs: args.rollMs,
    dedupWindow: args.dedupWindow ?? null,
    raw: rawRuns.map((m) => ({
      ...rate(m),
      cpuSeconds: m.cpuSeconds,
      mainCpuSeconds: m.mainCpuSeconds,
      v8CpuSeconds: m.v8CpuSeconds,
      libuvCpuSeconds: m.libuvCpuSeconds,
      brokerCpuSeconds: m.brokerCpuSeconds,
      machineCpuSeconds: m.machineCpuSeconds,
    })),
    fs: {
      ...rate(fsResult),
      cpuSeconds: fsResult.cpuSeconds,
      mainCpuSeconds: fsResult.mainCpuSeconds,
      v8CpuSeconds: fsResult.v8CpuSeconds,
      libuvCpuSeconds: fsResult.libuvCpuSeconds,
      brokerCpuSeconds: fsResult.brokerCpuSeconds,
      machineCpuSeconds: fsResult.machineCpuSeconds,
      archiveBytes: fsResult.archiveBytes,
      rawAround: fsRaw,
      ratio: rate(fsResult).recordsPerSec / fsRaw,
    },
    s3:
      s3Result && s3Raw !== null
        ? {
            ...rate(s3Result),
            cpuSeconds: s3Result.cpuSeconds,
            mainCpuSeconds: s3Result.mainCpuSeconds,
            v8CpuSeconds: s3Result.v8CpuSeconds,
            libuvCpuSeconds: s3Result.libuvCpuSeconds,
            brokerCpuSeconds: s3Result.brokerCpuSeconds,
            machineCpuSeconds: s3Result.machineCpuSeconds,
            archiveBytes: s3Result.archiveBytes,
            rawAround: s3Raw,
            ratio: rate(s3Result).recordsPerSec / s3Raw,
          }
        : null,
    cpuFloor: floor,
    targets: { fsRatio: 0.4, s3Ratio: 0.3, cpuToFloor: 2 },
    loadAverage: { start: loadStart, end: loadEnd },
  };
  console.log(`load average (1 min) at start ${fmt(loadStart, 2)}, at end ${fmt(loadEnd, 2)}`);
  console.log('');
  console.log(JSON.stringify(summary));
  const missing = [fsResult, ...(s3Result ? [s3Result] : [])].some((m) => m.records !== args.records);
  if (missing) {
    console.error('bench: the archiver did not archive every produced record');
    process.exit(1);
  }
  process.exit(0);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
