import { BatchGetItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FsArchiveStorage, encodeArchiveJson, manifestPath } from '../../../archive/storage';
import { createDynamoClient } from '../../../core/clients';
import { stackStateDir } from '../../support/ports';
import { testConfig } from '../../support/stack';
import { listArchiveFiles } from '../../../cli/archive/files';
import { freePort, humanLines, runCli } from '../../support/cli-process';

/** The README's first promise: `ttlstream demo` (what `npm run demo` runs) against the real stack. */
describe('ttlstream demo', () => {
  let ddb: DynamoDBClient;
  beforeAll(() => {
    ddb = createDynamoClient(testConfig());
  });
  afterAll(() => ddb.destroy());

  it('runs every stage end to end, exits 0, and leaves the table and archive as it says', async () => {
    const r = await runCli(['demo'], {}, 170_000);
    expect({ code: r.code, stderr: humanLines(r.stderr) }).toEqual({ code: 0, stderr: [] });
    for (const stage of [
      '[1/7] stack',
      '[2/7] table',
      '[3/7] ttl',
      '[4/7] pipeline',
      '[5/7] watch',
      '[6/7] checks',
      '[7/7] restore',
    ]) {
      expect(r.stdout).toContain(stage);
    }
    expect(r.stdout).toMatch(
      /6\/6 expired items deleted, each with its REMOVE record and archived; 6\/6 others kept/,
    );
    expect(r.stdout).toContain('npm run infra:down');
    expect(r.ms).toBeLessThan(150_000);

    // Independently of what it printed: the table holds exactly the kept items plus the restored one.
    const ids = [
      'order#1000',
      'order#1001',
      'order#1002',
      'order#1003',
      'order#1004',
      'order#1005',
      'order#2000',
      'order#2001',
      'order#3000',
      'order#3001',
      'order#3002',
      'order#4000',
    ];
    const out = await ddb.send(
      new BatchGetItemCommand({
        RequestItems: {
          ttlstream_demo: { Keys: ids.map((id) => ({ pk: { S: id } })), ConsistentRead: true },
        },
      }),
    );
    const present = (out.Responses?.ttlstream_demo ?? []).map((i) => i.pk?.S).sort();
    expect(present).toEqual([
      'order#1001',
      'order#2000',
      'order#2001',
      'order#3000',
      'order#3001',
      'order#3002',
      'order#4000',
    ]);

    // The config file it wrote points the explore commands at the demo's archive, which has this run's files.
    const configFile = join(stackStateDir(), 'demo-config.json');
    expect(existsSync(configFile)).toBe(true);
    const demoConfig = JSON.parse(readFileSync(configFile, 'utf8')) as { archive: { url: string } };
    const files = await listArchiveFiles(
      new FsArchiveStorage(demoConfig.archive.url.replace(/^file:\/\//, '')),
      {
        table: 'ttlstream_demo',
      },
    );
    expect(files.length).toBeGreaterThan(0);
    const ls = await runCli(['--config', configFile, 'archive', 'ls', '--table', 'ttlstream_demo', '--json']);
    expect(ls.code).toBe(0);
    expect((JSON.parse(ls.stdout) as unknown[]).length).toBe(files.length);
  }, 200_000);

  it('starts its archive afresh when it is from an earlier incarnation of the demo topic (a purged stack)', async () => {
    const configFile = join(stackStateDir(), 'demo-config.json');
    const demoConfig = JSON.parse(readFileSync(configFile, 'utf8')) as {
      archive: { url: string };
      topics: { shared: string };
    };
    const storage = new FsArchiveStorage(demoConfig.archive.url.replace(/^file:\/\//, ''));
    // A complete roll far beyond what the topic holds: the archiver would refuse it (ARCHIVE LINEAGE).
    const stale = manifestPath(demoConfig.topics.shared, 0, 9_000_000n, 9_000_009n);
    await storage.put(
      stale,
      encodeArchiveJson({ state: 'complete', first: '9000000', last: '9000009', files: [], records: 0 }),
    );
    const r = await runCli(['demo'], {}, 170_000);
    expect({ code: r.code, stderr: humanLines(r.stderr) }).toEqual({ code: 0, stderr: [] });
    expect(r.stdout).toContain('started afresh');
    expect(r.stdout).toMatch(/6\/6 expired items deleted, each with its REMOVE record and archived/);
    expect(await storage.get(stale)).toBeNull();
  }, 200_000);

  it('exits 1 naming the stage that failed', async () => {
    const closed = await freePort();
    const r = await runCli(['demo', '--no-stack'], {
      TTLSTREAM_DYNAMODB_ENDPOINT: `http://127.0.0.1:${closed}`,
      TTLSTREAM_DYNAMODB_MAX_ATTEMPTS: '1',
    });
    expect(r.code).toBe(1);
    expect(humanLines(r.stderr)).toEqual([
      expect.stringMatching(/^ttlstream: demo failed at stage "table": /),
    ]);
  });
});
