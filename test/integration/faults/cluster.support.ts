import type { Admin, Kafka } from 'kafkajs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ArchiveStorage } from '../../../archive/storage';
import {
  ManifestSchema,
  manifestPrefix,
  parseArchiveJson,
  parseManifestPath,
} from '../../../archive/storage/layout';
import type { TopicSpec } from '../../../core/topics';
import { CLUSTER_BROKER_IDS, type ClusterBroker } from '../../support/cluster';
import { startProber, type FaultEnv } from '../../support/fault-env';
import type { Run } from '../../support/fault-scenario';
import { CATEGORIES, planSeed, putAll, type Counts } from '../../support/ground-truth';
import { uniqueName } from '../../support/stack';
import { waitFor } from '../../support/wait-for';

/**
 * What the cluster suite watches while it kills brokers: who leads what, the stream's end offsets and the archiver's
 * committed offsets over time (to time the recoveries and to see writes stop), whether every committed offset was
 * covered by complete manifests when it was read, and the pipeline processes' /metrics.
 */

/** The broker a partition's leader and in-sync replicas are on, per partition. */
export async function partitionLeaders(
  admin: Admin,
  topic: string,
): Promise<Map<number, { leader: number; isr: number[] }>> {
  const meta = await admin.fetchTopicMetadata({ topics: [topic] });
  const partitions = meta.topics.find((t) => t.name === topic)?.partitions ?? [];
  return new Map(partitions.map((p) => [p.partitionId, { leader: p.leader, isr: [...p.isr].sort() }]));
}

/** Java's String.hashCode, which Kafka hashes a group id with to find its coordinator's partition. */
function javaHash(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) | 0;
  return h;
}

/** The __consumer_offsets partition that holds `groupId` (Kafka's Utils.abs(hashCode) % partitions). */
function offsetsPartitionOf(groupId: string, partitions: number): number {
  const h = javaHash(groupId);
  return (h === -2147483648 ? 0 : Math.abs(h)) % partitions;
}

/**
 * A new consumer group id whose coordinator is `broker` now: its offsets partition is led there. The offsets topic is
 * made first (a group's first FindCoordinator makes the broker create it).
 */
export async function groupCoordinatedBy(
  admin: Admin,
  broker: ClusterBroker,
  prefix: string,
): Promise<string> {
  // kafkajs does not retry a NOT_COORDINATOR answer while the new offsets topic loads.
  const leaders = await waitFor('the consumer offsets topic', async () => {
    await admin.fetchOffsets({ groupId: uniqueName('fcl-probe'), topics: [] });
    return partitionLeaders(admin, '__consumer_offsets');
  });
  for (let i = 0; i < 1000; i++) {
    const groupId = uniqueName(prefix);
    if (leaders.get(offsetsPartitionOf(groupId, leaders.size))?.leader === broker) return groupId;
  }
  throw new Error(`no group id coordinated by broker ${broker}: ${JSON.stringify([...leaders])}`);
}

/**
 * Create a declared topic (its settings as `topics apply` gives them) with every partition's preferred leader on
 * `broker` and the other two brokers as followers, so that one broker leads all of it.
 */
export async function createTopicLedBy(admin: Admin, spec: TopicSpec, broker: ClusterBroker): Promise<void> {
  const others = CLUSTER_BROKER_IDS.filter((b) => b !== broker);
  // Not kafkajs's waitForLeaders: it retries LEADER_NOT_AVAILABLE only, and a broker whose metadata has not caught up
  // with the new topic answers UNKNOWN_TOPIC_OR_PARTITION (seen under load).
  const created = await admin.createTopics({
    waitForLeaders: false,
    topics: [
      {
        topic: spec.topic,
        configEntries: spec.configEntries,
        replicaAssignment: Array.from({ length: spec.numPartitions }, (_, partition) => ({
          partition,
          replicas: [broker, ...(partition % 2 === 0 ? others : [...others].reverse())],
        })),
      },
    ],
  });
  if (!created) throw new Error(`topic ${spec.topic} already exists`);
  await waitFor(`every partition of ${spec.topic} led by broker ${broker}`, async () => {
    const leaders = await partitionLeaders(admin, spec.topic);
    return leaders.size === spec.numPartitions && [...leaders.values()].every((l) => l.leader === broker);
  });
}

/**
 * `count` more items of the scenario's table expiring `expiresInMs` from now, written and added to its ground truth:
 * work for the producer and the archiver right when a fault hits. The background probes pause meanwhile: a probe that
 * scanned the table before the items were written must not find them absent.
 */
export async function addWave(
  env: FaultEnv,
  run: Run,
  seed: number,
  count: number,
  expiresInMs: [number, number],
): Promise<void> {
  const truth = env.truths[0]!;
  const counts: Counts = Object.fromEntries(CATEGORIES.map((c) => [c, c === 'soon' ? count : 0]));
  const wave = planSeed(truth.table, { seed, model: truth.model, counts, soonMs: expiresInMs });
  const probes = await run.prober.stop();
  env.note(`probes taken ${probes.taken}, skipped ${probes.skipped}; paused for a wave of ${count} items`);
  await putAll(
    env.ddb,
    truth.table,
    [...wave.keys.values()].map((k) => k.versions[0]!.image),
  );
  for (const k of wave.keys.values()) truth.add(k);
  run.prober = startProber(env);
}

export interface Sample {
  atMs: number;
  /** Sum over the partitions of the stream's end offsets, or undefined when they could not be read. */
  end?: number;
  /** Sum of the archiver group's committed offsets. */
  committed?: number;
  /** Why the sample is incomplete. */
  error?: string;
}

/** A Prometheus text exposition, as series (name and labels) -> value. */
export function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

export interface Scrape {
  atMs: number;
  process: string;
  series: Map<string, number>;
}

export interface WatchOptions {
  /** A client bootstrapped on that one broker: the watch rotates over the brokers while some are down. */
  kafkaOn: (broker: string) => Kafka;
  brokers: string[];
  topic: string;
  groupId: string;
  storage: ArchiveStorage;
  /** Process name -> the port its /metrics is served on. */
  metricsPorts: Record<string, number>;
}

/**
 * Samples, in the background until `stop`, the stream's end offsets and the group's committed offsets (every
 * 300 ms), and the processes' /metrics (every second). After reading the committed offsets it reads the partition's
 * complete manifests: an offset committed beyond what complete manifests cover is an offset committed before its
 * files, a violation of invariant 4 (`commitProblems`).
 */
export class ClusterWatch {
  readonly samples: Sample[] = [];
  readonly scrapes: Scrape[] = [];
  readonly commitProblems: string[] = [];
  private stopped = false;
  private readonly loops: Array<Promise<void>>;
  /** Manifests found complete (they never change afterwards): path -> last offset. */
  private readonly complete = new Map<string, bigint>();

  constructor(private readonly o: WatchOptions) {
    this.loops = [this.offsetsLoop(), this.metricsLoop()];
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
  }

  /** The first sample from `fromMs` on whose `field` exceeds its value at `fromMs`: when it moved again. */
  movedAfter(field: 'end' | 'committed', fromMs: number): number | undefined {
    const before = this.valueAt(field, fromMs);
    if (before === undefined) return undefined;
    return this.samples.find((s) => s.atMs > fromMs && (s[field] ?? -1) > before)?.atMs;
  }

  /**
   * The first sample from `fromMs` on whose committed offsets pass the stream's end offsets at `fromMs`: when the
   * archiver had archived a record written after that instant.
   */
  archivedPast(fromMs: number): number | undefined {
    const end = this.valueAt('end', fromMs);
    if (end === undefined) return undefined;
    return this.samples.find((s) => s.atMs > fromMs && (s.committed ?? -1) > end)?.atMs;
  }

  /** The last value of `field` read at or before `atMs`. */
  valueAt(field: 'end' | 'committed', atMs: number): number | undefined {
    let v: number | undefined;
    for (const s of this.samples) if (s.atMs <= atMs && s[field] !== undefined) v = s[field];
    return v;
  }

  /** The values of `field` read between the two instants. */
  valuesBetween(field: 'end' | 'committed', fromMs: number, toMs: number): number[] {
    return this.samples
      .filter((s) => s.atMs >= fromMs && s.atMs <= toMs && s[field] !== undefined)
      .map((s) => s[field] as number);
  }

  private async offsetsLoop(): Promise<void> {
    let admin: Admin | undefined;
    let next = 0;
    while (!this.stopped) {
      const sample: Sample = { atMs: Date.now() };
      try {
        if (!admin) {
          // kafkajs bootstrapped on several brokers keeps trying a dead one: one broker at a time, the next after a
          // failure.
          admin = this.o.kafkaOn(this.o.brokers[next++ % this.o.brokers.length]!).admin();
          await admin.connect();
        }
        const ends = await admin.fetchTopicOffsets(this.o.topic);
        sample.end = ends.reduce((n, p) => n + Number(p.high), 0);
        const res = await admin.fetchOffsets({ groupId: this.o.groupId, topics: [this.o.topic] });
        const committed = res[0]?.partitions ?? [];
        sample.committed = committed.reduce((n, p) => n + Math.max(0, Number(p.offset)), 0);
        await this.checkCommitsCovered(committed);
      } catch (err) {
        sample.error = String(err);
        // A broker or a leader gone: the sample stays incomplete, and the client reconnects (kafkajs may keep a
        // dead connection).
        await admin?.disconnect().catch(() => undefined);
        admin = undefined;
      }
      this.samples.push(sample);
      await sleep(300);
    }
    await admin?.disconnect().catch(() => undefined);
  }

  private async checkCommitsCovered(committed: Array<{ partition: number; offset: string }>): Promise<void> {
    for (const { partition, offset } of committed) {
      const c = BigInt(offset);
      if (c <= 0n) continue;
      const prefix = manifestPrefix(this.o.topic, partition);
      let covered = -1n;
      for await (const path of this.o.storage.list(prefix)) {
        const range = parseManifestPath(path);
        if (!range) continue;
        if (!this.complete.has(path)) {
          const body = await this.o.storage.get(path);
          if (body && parseArchiveJson(ManifestSchema, body, path).state === 'complete')
            this.complete.set(path, range.last);
        }
        const last = this.complete.get(path);
        if (last !== undefined && last > covered) covered = last;
      }
      if (covered + 1n < c)
        this.commitProblems.push(
          `partition ${partition}: offset ${c} committed while complete manifests reached ${covered}`,
        );
    }
  }

  private async metricsLoop(): Promise<void> {
    while (!this.stopped) {
      await Promise.all(
        Object.entries(this.o.metricsPorts).map(async ([name, port]) => {
          const res = await fetch(`http://127.0.0.1:${port}/metrics`, {
            signal: AbortSignal.timeout(2000),
          }).catch(() => undefined);
          if (res?.ok)
            this.scrapes.push({ atMs: Date.now(), process: name, series: parseMetrics(await res.text()) });
        }),
      );
      await sleep(1000);
    }
  }
}

/**
 * What the processes' /metrics showed during [fromMs, toMs], against the last scrape before it: every counter that
 * grew and every gauge that rose, with the largest value. The series named: `process series` -> `before -> max`.
 */
export function metricsDuring(scrapes: Scrape[], fromMs: number, toMs: number, names: RegExp): string[] {
  const out: string[] = [];
  for (const name of new Set(scrapes.map((s) => s.process))) {
    const mine = scrapes.filter((s) => s.process === name);
    const before = [...mine].reverse().find((s) => s.atMs <= fromMs)?.series ?? new Map<string, number>();
    const during = mine.filter((s) => s.atMs > fromMs && s.atMs <= toMs);
    const keys = new Set(during.flatMap((s) => [...s.series.keys()]).filter((k) => names.test(k)));
    for (const key of [...keys].sort()) {
      const b = before.get(key) ?? 0;
      const max = Math.max(...during.map((s) => s.series.get(key) ?? b));
      if (max > b) out.push(`${name} ${key}: ${round(b)} -> ${round(max)}`);
    }
  }
  return out;
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
