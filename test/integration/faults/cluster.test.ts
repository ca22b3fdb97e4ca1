import type { Admin } from 'kafkajs';
import { rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { openArchiveStorage, type ArchiveStorage } from '../../../archive/storage';
import { createKafka } from '../../../core/clients';
import type { ConfigInput } from '../../../core/config';
import { silentLogger } from '../../../core/logger';
import { declaredTopics, inspectTopics } from '../../../core/topics';
import { archivedOncePerEventId, readArchive } from '../../support/archive-fixture';
import { freePort } from '../../support/cli-process';
import {
  CLUSTER_BROKER_IDS,
  clusterBrokers,
  clusterCtl,
  lockCluster,
  requireCluster,
  type ClusterBroker,
} from '../../support/cluster';
import { archiverCaughtUp, takeProbe, type FaultEnv } from '../../support/fault-env';
import { begin, settleAndCheck, setup, type Run } from '../../support/fault-scenario';
import { scaleCounts, snapshotTable } from '../../support/ground-truth';
import { createTestArchive, testConfig, uniqueName } from '../../support/stack';
import { waitFor } from '../../support/wait-for';
import {
  addWave,
  ClusterWatch,
  createTopicLedBy,
  groupCoordinatedBy,
  metricsDuring,
  partitionLeaders,
} from './cluster.support';

/**
 * Invariants 1–4 on a replicated Kafka cluster as MSK runs one (infra/cluster.sh: three brokers, a controller of their
 * own, replication 3, min.insync.replicas 2) while its brokers die: the scanner and producer in one process, the
 * archiver in another, on this lane's DynamoDB and S3. One broker leads every partition of the stream topic and
 * coordinates the archiver's group; it is SIGKILLed in the middle of a burst of deletions and archiving, started
 * again (it takes its leaderships back, a second leader move), then killed again together with a second broker
 * (one replica left: below min.insync.replicas, writes must stop) and both started again. No operator acts: the
 * processes must ride it all out, and at the end the ground truth, the whole topic and the whole archive are
 * checked. The recovery times and what /metrics showed are printed (docs/operations.md reports them).
 */

const RECOVERY_MS = 60_000;
/** Counters and gauges an operator would watch during a broker outage. */
const WATCHED =
  /^ttlstream_(kafka_client_errors_total|producer_(marks_backlog|deletion_lag_seconds)|archiver_(records_behind|oldest_unarchived_seconds|roll_failing|roll_errors_total))/;

describe('a three-broker Kafka cluster losing brokers under the pipeline', () => {
  let release: (() => void) | undefined;
  let e: FaultEnv;
  let run: Run;
  let watch: ClusterWatch | undefined;
  let admin: Admin;
  let storage: ArchiveStorage;
  let groupId: string;
  const dirs: string[] = [];
  /** The broker that leads the stream and coordinates the archiver group. */
  const leader = CLUSTER_BROKER_IDS[Math.floor(Math.random() * CLUSTER_BROKER_IDS.length)] as ClusterBroker;
  const second = CLUSTER_BROKER_IDS.find((b) => b !== leader) as ClusterBroker;
  const survivor = CLUSTER_BROKER_IDS.find((b) => b !== leader && b !== second) as ClusterBroker;
  const report: string[] = [];
  const outages: Array<{ what: string; fromMs: number; toMs: number }> = [];

  const leadersOf = async (): Promise<Array<{ leader: number; isr: number[] }>> => [
    ...(await partitionLeaders(admin, e.topic)).values(),
  ];
  const noneDied = (): void => expect(e.procs.filter((p) => !p.alive).map((p) => p.describe())).toEqual([]);
  /** When the producer published and the archiver archived past `fromMs` again. */
  const recovery = async (fromMs: number, what: string): Promise<{ published: number; archived: number }> => {
    const w = watch!;
    // A recovery that does not come says what the watch last saw, what the cluster says of the stream's partitions,
    // what happened before it and what the processes logged.
    const explained = async (err: unknown): Promise<never> => {
      const last = w.samples.slice(-5).map((x) => ({ ...x, atMs: x.atMs - fromMs }));
      const partitions = await Promise.race([
        leadersOf().then((l) => JSON.stringify(l)),
        sleep(5000).then(() => 'no metadata within 5 s'),
      ]).catch((failed: unknown) => `metadata failed: ${String(failed)}`);
      const logs = e.procs.map((p) => `--- ${p.describe()} stderr ---\n${p.stderr(3000)}`).join('\n');
      throw new Error(
        `${String(err)}; last samples ${JSON.stringify(last)}; partitions ${partitions}; ${e.timeline.join(' | ')}\n${logs}`,
      );
    };
    const published = await waitFor(
      `a record published after ${what}`,
      () => w.movedAfter('end', fromMs),
      RECOVERY_MS,
    ).catch(explained);
    const archived = await waitFor(
      `a record written after ${what} archived`,
      () => w.archivedPast(fromMs),
      RECOVERY_MS,
    ).catch(explained);
    return { published: published - fromMs, archived: archived - fromMs };
  };

  beforeAll(async () => {
    await requireCluster();
    release = await lockCluster();
    const brokers = clusterBrokers();
    const kafka = createKafka(testConfig({ kafka: { brokers } }), silentLogger);
    admin = kafka.admin();
    await admin.connect();
    groupId = await groupCoordinatedBy(admin, leader, 'fcl-archiver');
    const archiveUrl = await createTestArchive('s3', uniqueName('fcl-archive'), dirs);
    const overrides: ConfigInput = {
      kafka: { brokers },
      topics: {
        shared: uniqueName('fcl'),
        deadLetter: uniqueName('fcl-dlq'),
        partitions: 3,
        replicationFactor: 3,
        minInsyncReplicas: 2,
      },
      // A member lost with its coordinator blocks the group's next rebalance for its session: 6 s instead of 30 s
      // keeps the suite short (docs/operations.md gives the default's figures).
      archive: { url: archiveUrl, groupId, rollMs: 500, monitorIntervalMs: 1000, sessionTimeoutMs: 6000 },
      scanner: { readRateLimit: 200 },
    };
    const config = testConfig(overrides);
    // The stream topic as `topics apply` declares it, every partition led by one broker; the dead-letter topic is
    // left to `topics apply` (createFaultEnv applies the declared topics).
    const stream = declaredTopics(config).find((t) => t.topic === config.topics.shared);
    await createTopicLedBy(admin, stream!, leader);
    e = await setup([{ prefix: 'fcl', seed: 4141, counts: { ...scaleCounts(1), expired: 120 } }], overrides);
    storage = openArchiveStorage(e.config);
  }, 120_000);

  afterAll(async () => {
    await watch?.stop();
    await e?.cleanup();
    await admin?.disconnect().catch(() => undefined);
    // The cluster stays whole for whoever uses it next: every broker started (a no-op for a running one).
    for (const b of CLUSTER_BROKER_IDS) await clusterCtl('start', b).catch(() => undefined);
    release?.();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }, 300_000);

  it('creates ttlstream topics with three replicas and min.insync.replicas 2', async () => {
    const states = await inspectTopics(admin, declaredTopics(e.config));
    expect(
      states.map((s) => ({ topic: s.spec.topic, replicas: s.replicationFactor, drift: s.drift })),
    ).toEqual(
      [e.config.topics.shared, e.config.topics.deadLetter].map((topic) => ({
        topic,
        replicas: 3,
        drift: [],
      })),
    );
    expect(states[0]?.spec.configEntries).toContainEqual({ name: 'min.insync.replicas', value: '2' });
  });

  it('kill -9 of the broker leading the stream and the archiver group mid-burst: both recover on their own', async () => {
    const metricsPorts = { producer: await freePort(), archiver: await freePort() };
    e.spawn('pipeline-1', ['scanner', 'producer'], { TTLSTREAM_METRICS_PORT: String(metricsPorts.producer) });
    e.spawn('archiver-1', ['archiver'], { TTLSTREAM_METRICS_PORT: String(metricsPorts.archiver) });
    run = begin(e);
    const watchConfig = testConfig({
      kafka: { brokers: clusterBrokers(), requestTimeoutMs: 3000, connectionTimeoutMs: 1000 },
    });
    const w = (watch = new ClusterWatch({
      kafkaOn: (broker) =>
        createKafka(watchConfig, silentLogger, 'watch', { retries: 0, initialRetryTime: 100 }, [broker]),
      brokers: clusterBrokers(),
      topic: e.topic,
      groupId,
      storage,
      metricsPorts,
    }));
    const truth = e.truths[0]!;
    await waitFor(
      'deletions and archiving under way',
      async () => {
        const present = await snapshotTable(e.ddb, truth.table);
        const gone = [...truth.keys.keys()].filter((id) => !present.has(id)).length;
        return gone >= 30 && (w.valueAt('committed', Date.now()) ?? 0) > 0;
      },
      60_000,
    );
    expect((await leadersOf()).map((l) => l.leader)).toEqual([leader, leader, leader]);

    const killedAt = Date.now();
    await clusterCtl('kill', leader);
    e.note(`SIGKILL broker ${leader} (leads ${e.topic}, coordinates ${groupId})`);
    await takeProbe(e, `right after SIGKILL of broker ${leader}`);
    const elected = await waitFor(
      'new leaders for the stream',
      async () => (await leadersOf()).every((l) => l.leader !== leader && l.leader > 0) && Date.now(),
      RECOVERY_MS,
    );
    const r = await recovery(killedAt, `broker ${leader} was killed`);
    outages.push({
      what: `broker ${leader} killed`,
      fromMs: killedAt,
      toMs: killedAt + Math.max(r.published, r.archived),
    });
    report.push(
      `kill -9 of broker ${leader}: new leaders after ${elected - killedAt} ms; producer publishing again after ${r.published} ms, archiver archiving what came after the kill after ${r.archived} ms`,
    );
    noneDied();
  }, 180_000);

  it('the killed broker restarted: it takes its leaderships back and both follow', async () => {
    const startedAt = Date.now();
    await clusterCtl('start', leader);
    const back = await waitFor(
      `broker ${leader} leading the stream again`,
      async () => (await leadersOf()).every((l) => l.leader === leader && l.isr.length === 3) && Date.now(),
      RECOVERY_MS,
    );
    e.note(`broker ${leader} back after ${back - startedAt} ms, leading the stream again`);
    // Records for the moved leaders: the clients still know the old ones.
    await addWave(e, run, 4242, 60, [0, 1000]);
    await takeProbe(e, `after broker ${leader} took its leaderships back`);
    const r = await recovery(back, `broker ${leader} took its leaderships back`);
    report.push(
      `broker ${leader} restarted: back in the cluster and leading after ${back - startedAt} ms; then producer publishing after ${r.published} ms, archiver archiving after ${r.archived} ms`,
    );
    noneDied();
  }, 180_000);

  it('two brokers down: writes stop (min.insync.replicas 2), nothing is deleted without its record, all resumes', async () => {
    const w = watch!;
    const truth = e.truths[0]!;
    await addWave(e, run, 4343, 80, [0, 2000]);
    const killedAt = Date.now();
    await Promise.all([clusterCtl('kill', leader), clusterCtl('kill', second)]);
    e.note(`SIGKILL brokers ${leader} and ${second}; broker ${survivor} alone`);
    const fenced = await waitFor(
      `broker ${survivor} the only in-sync replica`,
      async () => (await leadersOf()).every((l) => l.isr.join() === String(survivor)) && Date.now(),
      RECOVERY_MS,
    );
    // Work waits meanwhile: items due and present, which the producer may delete only once it has published.
    await sleep(5000);
    const present = await snapshotTable(e.ddb, truth.table);
    const waiting = truth.dueForDeletion(Date.now()).filter((k) => present.has(k.id)).length;
    await takeProbe(e, `brokers ${leader} and ${second} down`);
    // From a second after the fence: the survivor, leader now, may still move its high watermark up to what it had
    // replicated before the kill (acknowledged to nobody yet); nothing new can be appended. Three samples of the end
    // offsets show it; the watch may need a few tries to reach the survivor (it moves on after each failure). A
    // partition may also be left with no leader at all (Kafka answers "no leader ... leadership election" until a
    // second replica is back): nothing can be appended there either, and such an answer counts as a sample.
    const sampled = (): number[] => w.valuesBetween('end', fenced + 1000, Date.now());
    const leaderless = (): number =>
      w.samples.filter(
        (x) => x.atMs >= fenced + 1000 && x.error?.includes('no leader for this topic-partition'),
      ).length;
    await waitFor(
      'three end-offset samples below min ISR',
      async () => sampled().length + leaderless() >= 3,
      RECOVERY_MS,
    ).catch(() => undefined);
    const during = sampled();
    const noLeader = leaderless();
    if (during.length + noLeader < 3)
      e.note(
        `samples while below min ISR: ${JSON.stringify(w.samples.filter((x) => x.atMs >= fenced).slice(-10))}`,
      );
    const restartAt = Date.now();
    await Promise.all([clusterCtl('start', leader), clusterCtl('start', second)]);
    const backAt = Date.now();
    e.note(`brokers ${leader} and ${second} back after ${backAt - restartAt} ms`);
    // From their start, not from both being back: the first one back restores min.insync.replicas, and the waiting
    // items may all be published before the second is.
    const r = await recovery(restartAt, `brokers ${leader} and ${second} were started`);
    outages.push({
      what: `brokers ${leader} and ${second} killed`,
      fromMs: killedAt,
      toMs: restartAt + Math.max(r.published, r.archived),
    });
    report.push(
      `brokers ${leader} and ${second} killed: ${survivor} alone in sync after ${fenced - killedAt} ms; ${waiting} due items waiting and the end offsets at ${[...new Set(during)].join(', ')} over ${during.length} samples (${noLeader} more found a partition without a leader) below min.insync.replicas; both back ${backAt - restartAt} ms after their start; producer publishing ${r.published} ms and archiver archiving ${r.archived} ms after their start`,
    );
    expect(waiting).toBeGreaterThan(0);
    const enough = during.length + noLeader >= 3;
    expect({ samples: during.length + noLeader, timeline: enough ? [] : e.timeline }).toEqual({
      samples: expect.any(Number),
      timeline: [],
    });
    expect(during.length + noLeader).toBeGreaterThanOrEqual(3);
    expect(new Set(during).size).toBeLessThanOrEqual(1);
    noneDied();
  }, 240_000);

  it('nothing lost: every deletion has its record, the archive has each once, offsets committed after their files', async () => {
    await settleAndCheck(e, run, `three-broker cluster, broker ${leader} killed`, 120_000, () =>
      archiverCaughtUp(e, groupId, 90_000),
    );
    const w = watch!;
    await w.stop();
    watch = undefined;
    expect(w.commitProblems).toEqual([]);
    const contents = await readArchive(storage);
    expect(contents.problems).toEqual([]);
    expect(archivedOncePerEventId(contents.rows, e.stream.messages())).toEqual([]);
    expect(contents.rows.length).toBeGreaterThan(0);
    for (const o of outages)
      report.push(
        `${o.what}, what /metrics showed:\n    ${metricsDuring(w.scrapes, o.fromMs, o.toMs, WATCHED).join('\n    ')}`,
      );
    process.stdout.write(`[fault] three-broker cluster:\n  ${report.join('\n  ')}\n`);
  }, 240_000);
});
