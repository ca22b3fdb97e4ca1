import {
  DeleteBucketPolicyCommand,
  ListObjectsV2Command,
  PutBucketPolicyCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import type { Admin, Kafka, Producer } from 'kafkajs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createKafka, createS3Client } from '../../../core/clients';
import { makeRecord, produceAll, removeMessage } from '../../support/archive-fixture';
import { createTestBucket, createTestTopic, testConfig, uniqueName } from '../../support/stack';
import { waitFor } from '../../support/wait-for';
import { freePort, isolatedRunEnv, runCli, spawnCli } from '../../support/cli-process';
import {
  rulesWithForInSeconds,
  startPrometheus,
  type PromAlert,
  type PrometheusProcess,
} from './prometheus-process.support';

const RULES = resolve(__dirname, '..', '..', '..', 'deploy', 'prometheus', 'ttlstream-rules.yml');
const RUNBOOK = 'https://ttlstream.invalid/docs/operations.md';
const BASE = Math.floor(Date.UTC(2024, 4, 1, 10, 0) / 1000);

/** A bucket policy that refuses every PutObject: what a role without s3:PutObject meets (reads still work). */
function denyWrites(bucket: string): string {
  return JSON.stringify({
    Version: '2012-10-17',
    Statement: [
      { Effect: 'Deny', Principal: '*', Action: 's3:PutObject', Resource: `arn:aws:s3:::${bucket}/*` },
    ],
  });
}

/**
 * Alerts on a real Prometheus scraping real `ttlstream run` processes, each alert seen firing and then resolved:
 * an archiver whose bucket refuses writes (TtlstreamArchiveWritesFailing, with the reason, until the bucket takes them
 * again), records that left Kafka before the archive had them (TtlstreamArchiveLoss, until `ttlstream archive
 * ack-loss`), and a role that no process runs (TtlstreamRoleAbsent, also once its only target is taken away). The
 * rules are the project's, each `for:` in seconds instead of minutes (rulesWithForInSeconds); promtool checks the
 * durations.
 */
describe('Prometheus alerts that fire and clear on real processes', () => {
  const topic = uniqueName('alrt-rm');
  const bucket = uniqueName('alrt-arch');
  const names = { control: uniqueName('alrt-ctl'), marks: uniqueName('alrt-marks'), topic };
  const dir = mkdtempSync(join(tmpdir(), 'ttlstream-alerts-'));
  const config = testConfig();
  const kafka: Kafka = createKafka(config);
  let s3: S3Client;
  let admin: Admin;
  let producer: Producer;
  let env: NodeJS.ProcessEnv;
  let prometheus: PrometheusProcess;
  let archiverTarget = '';
  const runs: Array<ReturnType<typeof spawnCli>> = [];
  const log = (): string =>
    runs.map((r, i) => `--- ttlstream run ${i}:\n${r.output().slice(-3000)}\n`).join('') +
    `--- prometheus:\n${prometheus?.output().slice(-3000) ?? ''}`;

  /** The alerts named `name` in `state` (any state when not given), or undefined when there are none. */
  const alertsOf = async (name: string, state?: PromAlert['state']): Promise<PromAlert[] | undefined> => {
    const found = (await prometheus.alerts()).filter(
      (a) => a.labels.alertname === name && (state === undefined || a.state === state),
    );
    return found.length > 0 ? found : undefined;
  };
  const until = <T>(what: string, probe: () => Promise<T | undefined>, ms = 90_000): Promise<T> =>
    waitFor(what, probe, ms, 250).catch((err: unknown) => {
      throw new Error(`${err instanceof Error ? err.message : String(err)}\n${log()}`);
    });
  const gone = (name: string, filter: (a: PromAlert) => boolean = () => true) =>
    until(`${name} resolved`, async () => ((await alertsOf(name))?.some(filter) ? undefined : true));

  beforeAll(async () => {
    s3 = createS3Client(config);
    admin = kafka.admin();
    producer = kafka.producer({ idempotent: true });
    await Promise.all([admin.connect(), producer.connect()]);
    env = isolatedRunEnv(names, join(dir, 'unused-archive'), {
      TTLSTREAM_TOPICS_PER_TABLE_PREFIX: `${topic}.t.`,
      TTLSTREAM_ARCHIVE_URL: `s3://${bucket}/archive`,
    });
    await createTestBucket(s3, bucket);
    await s3.send(new PutBucketPolicyCommand({ Bucket: bucket, Policy: denyWrites(bucket) }));

    // Ten records, of which Kafka still has the last five when the archiver first sees the partition, while its
    // group's committed offset says 0: offsets 0-4 left Kafka unarchived (a loss), 5-9 are to archive.
    await createTestTopic(admin, topic, 1);
    const records = Array.from({ length: 10 }, (_, i) => makeRecord('orders', i, BASE + i));
    await produceAll(
      producer,
      topic,
      records.map((r) => removeMessage(r, 'orders')),
    );
    await admin.setOffsets({
      groupId: `${topic}-archiver`,
      topic,
      partitions: [{ partition: 0, offset: '0' }],
    });
    await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '5' }] });

    prometheus = await startPrometheus({
      dir,
      targets: [],
      ruleFiles: [rulesWithForInSeconds(RULES, join(dir, 'rules-for-in-seconds.yml'))],
    });
  });

  afterAll(async () => {
    for (const run of runs)
      if (run.exitCode === null && run.signalCode === null) {
        run.kill('SIGTERM');
        await Promise.race([run.result, sleep(30_000).then(() => run.kill('SIGKILL'))]);
      }
    await prometheus?.stop();
    await s3.send(new DeleteBucketPolicyCommand({ Bucket: bucket })).catch(() => undefined);
    await Promise.all([admin?.disconnect(), producer?.disconnect()]);
    s3?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('pages on archive writes the bucket refuses, with the reason, and clears at the first roll written; the loss lasts until acknowledged', async () => {
    const port = await freePort();
    archiverTarget = `127.0.0.1:${port}`;
    runs.push(spawnCli(['run', '--roles', 'archiver'], { ...env, TTLSTREAM_METRICS_PORT: String(port) }));
    await prometheus.setTargets([archiverTarget]);

    const failing = await until('TtlstreamArchiveWritesFailing firing', () =>
      alertsOf('TtlstreamArchiveWritesFailing', 'firing'),
    );
    // moto answers a policy's denial with a bare 403 (real S3 says AccessDenied): the SDK has no code to name.
    expect(failing.map((a) => a.labels)).toEqual([
      {
        alertname: 'TtlstreamArchiveWritesFailing',
        severity: 'page',
        job: 'ttlstream',
        instance: archiverTarget,
        sink: 's3',
        reason: 'http_403',
      },
    ]);
    expect(failing[0]?.annotations).toMatchObject({
      summary: `ttlstream: archive writes of ${archiverTarget} to s3 keep failing (http_403)`,
      runbook_url: `${RUNBOOK}#ttlstreamarchivewritesfailing`,
    });
    // The loss was found at assignment; its record cannot be written yet, and the alert does not wait for it.
    const lost = await until('TtlstreamArchiveLoss firing', () => alertsOf('TtlstreamArchiveLoss', 'firing'));
    expect(lost.map((a) => a.labels)).toEqual([
      { alertname: 'TtlstreamArchiveLoss', severity: 'page', topic, partition: '0' },
    ]);

    // The fault removed: the next attempt writes the roll, and the alert clears with no restart.
    await s3.send(new DeleteBucketPolicyCommand({ Bucket: bucket }));
    await gone('TtlstreamArchiveWritesFailing');
    const lossRecords = await until('the loss record written', async () => {
      const out = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'archive/_loss/' }));
      const keys = (out.Contents ?? []).map((o) => o.Key);
      return keys.length > 0 ? keys : undefined;
    });
    expect(lossRecords).toEqual([`archive/_loss/${topic}/0/00000000000000000000-00000000000000000004.json`]);
    // Writing works again, but records are still lost: only an operator ends that alert.
    expect(await alertsOf('TtlstreamArchiveLoss', 'firing')).toHaveLength(1);

    const dry = await runCli(['archive', 'ack-loss', '--topic', topic, '--partition', '0', '--dry-run'], env);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toBe(
      `would acknowledge the loss of ${topic} partition 0: offsets 0-4 (5 records), through offset 4\n`,
    );
    const acks = async (): Promise<number> =>
      (
        (await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'archive/_loss-ack/' })))
          .Contents ?? []
      ).length;
    expect(await acks()).toBe(0);
    const ack = await runCli(['archive', 'ack-loss', '--topic', topic, '--note', 'alerts test'], env);
    expect(ack.stderr).toBe('');
    expect(ack.stdout).toContain(`acknowledged the loss of ${topic} partition 0: offsets 0-4 (5 records)`);
    expect(await acks()).toBe(1);
    await gone('TtlstreamArchiveLoss');
    expect(await prometheus.query(`ttlstream_archiver_loss{topic="${topic}"}`)).toEqual([
      expect.objectContaining({ value: [expect.any(Number), '0'] }),
    ]);

    // What was still on Kafka is archived, and `archive verify` explains the gap by the loss record.
    const verify = await runCli(['archive', 'verify', '--json'], env);
    expect(verify.code).toBe(0);
  }, 240_000);

  it('fires TtlstreamRoleAbsent for a role no process runs, clears when one runs, and fires again when its target is gone', async () => {
    // Only the archiver runs: no scanner, producer, streams follower nor API.
    const absent = await until('TtlstreamRoleAbsent firing for the other roles', async () => {
      const firing = await alertsOf('TtlstreamRoleAbsent', 'firing');
      return firing && firing.length === 4 ? firing : undefined;
    });
    expect(absent.map((a) => [a.labels.role, a.labels.severity]).sort()).toEqual([
      ['api', 'ticket'],
      ['producer', 'page'],
      ['scanner', 'page'],
      ['streams', 'page'],
    ]);
    expect(absent.find((a) => a.labels.role === 'producer')?.annotations).toMatchObject({
      summary: 'ttlstream: no process runs the producer role',
      runbook_url: `${RUNBOOK}#ttlstreamroleabsent`,
    });

    const port = await freePort();
    const producerTarget = `127.0.0.1:${port}`;
    runs.push(spawnCli(['run', '--roles', 'producer'], { ...env, TTLSTREAM_METRICS_PORT: String(port) }));
    await prometheus.setTargets([archiverTarget, producerTarget]);
    const isProducer = (a: PromAlert): boolean => a.labels.role === 'producer';
    await gone('TtlstreamRoleAbsent', isProducer);
    expect((await alertsOf('TtlstreamRoleAbsent', 'firing'))?.map((a) => a.labels.role).sort()).toEqual([
      'api',
      'scanner',
      'streams',
    ]);

    // Its Deployment scaled to zero: the target is gone, not down. TtlstreamProcessDown cannot see that; this does.
    await prometheus.setTargets([archiverTarget]);
    await until('TtlstreamRoleAbsent firing for the producer again', async () =>
      (await alertsOf('TtlstreamRoleAbsent', 'firing'))?.find(isProducer),
    );
    expect(await alertsOf('TtlstreamProcessDown')).toBeUndefined();
  }, 180_000);
});
