import { rmSync } from 'node:fs';
import { DAY_MS } from '../../../archive/retention/policy';
import { prepareRow } from '../../../archive/rows';
import { openArchiveStorage, type ArchiveStorage } from '../../../archive/storage';
import { verifyArchive } from '../../../archive-tools/verify';
import {
  GetBucketLifecycleConfigurationCommand,
  PutBucketLifecycleConfigurationCommand,
  type LifecycleRule,
} from '@aws-sdk/client-s3';
import { createS3Client } from '../../../core/clients';
import { toArchived, type StreamRecord } from '../../../schemas';
import { createTestArchive, createTestBucket, testConfig, uniqueName } from '../../support/stack';
import { runCli } from '../../support/cli-process';
import { archiveRows, countIds, makeRecord, readArchive } from '../../support/archive-fixture';

/**
 * Retention purge through the real CLI on both backends: SIGKILL at each step of a file's removal,
 * then the archive still verifies, no record younger than the retention is gone, and a rerun
 * finishes the job.
 */

const HOUR = 3_600_000;

describe('archive purge: SIGKILL at each step, fs and S3', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  /** 40 records 6 hours apart, the oldest 10 days ago, over two tables; rolls of 5 offsets. */
  async function seed(storage: ArchiveStorage): Promise<StreamRecord[]> {
    const now = Date.now();
    const records: StreamRecord[] = [];
    for (let i = 0; i < 40; i++) {
      const table = i % 2 ? 'orders' : 'users';
      records.push(makeRecord(table, i, Math.floor((now - (40 - i) * 6 * HOUR) / 1000), 200));
    }
    const rows = records.map((record, i) =>
      prepareRow(
        toArchived(
          { kind: 'remove', record },
          { topic: 'purge-t', partition: 0, offset: String(i), timestamp: String(now) },
        ),
      ),
    );
    await archiveRows(storage, 'purge-t', rows, { perRoll: 5, timestampMs: now });
    return records;
  }

  it.each([
    ['fs', 'purge.after-record@2'],
    ['fs', 'purge.after-index@2'],
    ['fs', 'purge.after-data@2'],
    ['s3', 'purge.after-record@3'],
    ['s3', 'purge.after-index@1'],
    ['s3', 'purge.after-data@2'],
  ] as const)('%s: SIGKILL at %s', async (backend, crashAt) => {
    const name = uniqueName(`purge-${backend}`);
    const url = await createTestArchive(backend, name, dirs);
    const storage = openArchiveStorage(testConfig({ archive: { url } }));
    const records = await seed(storage);
    // Younger than the retention with an hour's margin (files hold whole UTC hours).
    const keep = records.filter(
      (r) => r.dynamodb.ApproximateCreationDateTime * 1000 > Date.now() - 5 * DAY_MS,
    );
    const env = { TTLSTREAM_ARCHIVE_RETENTION_DAYS: '5' };

    const dry = await runCli(['archive', 'purge', '--archive', url, '--dry-run', '--json'], env);
    expect(dry.code).toBe(0);
    const due = (JSON.parse(dry.stdout) as { files: unknown[] }).files.length;
    expect(due).toBeGreaterThan(2);
    expect((await verifyArchive(storage)).purged).toBe(0);

    const crashed = await runCli(['archive', 'purge', '--archive', url], {
      ...env,
      TTLSTREAM_CRASH_AT: crashAt,
    });
    expect(crashed.signal).toBe('SIGKILL');
    expect(crashed.stderr).toContain(`crash point ${crashAt.split('@')[0]}`);
    const mid = await verifyArchive(storage);
    expect(mid.findings).toEqual([]);
    const ids = countIds((await readArchive(storage)).rows);
    expect(keep.filter((r) => ids.get(r.eventID) !== 1)).toEqual([]);

    const rerun = await runCli(['archive', 'purge', '--archive', url, '--json'], env);
    expect(rerun.code).toBe(0);
    const after = await verifyArchive(storage);
    expect(after.findings).toEqual([]);
    expect(after.purgeInProgress).toEqual([]);
    expect(after.purged).toBe(due);
    const left = countIds((await readArchive(storage)).rows);
    expect(keep.filter((r) => left.get(r.eventID) !== 1)).toEqual([]);
    expect(after.rows).toBe(left.size);
    const verified = await runCli(['archive', 'verify', '--archive', url, '--json'], {});
    expect(verified.code).toBe(0);
    expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true, purged: due });
  });

  it('archive lifecycle prints a configuration the S3 server accepts, for the table prefix and retention', async () => {
    const s3 = createS3Client(testConfig());
    const bucket = await createTestBucket(s3, uniqueName('lifecycle'));
    const printed = await runCli(
      ['archive', 'lifecycle', '--table', 'orders', '--archive', `s3://${bucket}/root`],
      {
        TTLSTREAM_ARCHIVE_RETENTION_DAYS: '30',
      },
    );
    expect(printed.code).toBe(0);
    const config = JSON.parse(printed.stdout) as { Rules: LifecycleRule[] };
    await s3.send(
      new PutBucketLifecycleConfigurationCommand({ Bucket: bucket, LifecycleConfiguration: config }),
    );
    const got = await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: bucket }));
    expect(got.Rules?.[0]).toMatchObject({
      Filter: { Prefix: 'root/table=orders/' },
      Expiration: { Days: 31 },
      Status: 'Enabled',
    });
    expect(got.Rules?.[1]).toMatchObject({
      Filter: { Prefix: 'root/_index/table=orders/' },
      Expiration: { Days: 31 },
      Status: 'Enabled',
    });
  });
});
