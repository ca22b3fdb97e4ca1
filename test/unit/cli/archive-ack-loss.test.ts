import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LossReporter } from '../../../archiver/loss';
import { FsArchiveStorage, LossAckSchema, lossAckPath, parseArchiveJson } from '../../../archive/storage';
import { silentLogger } from '../../../core/logger';
import { metrics } from '../../../core/metrics';
import { ArchiveStreamLosses } from '../../../streams/loss';
import { cli } from '../../support/cli';

/** `archive ack-loss` in-process on a file-system archive holding a loss record: no service is touched. */
describe('ttlstream archive ack-loss', () => {
  let dir: string;
  let storage: FsArchiveStorage;
  const T = 'orders.remove';
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttlstream-cli-ack-loss-'));
    storage = new FsArchiveStorage(dir);
    await new LossReporter(storage, silentLogger).report(T, 3, 20n, 39n, 'assignment');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const ackLoss = (...args: string[]) => cli(['archive', 'ack-loss', '--archive', `file://${dir}`, ...args]);
  const ackFile = (): string => join(dir, ...lossAckPath(T, 3, 39n).split('/'));

  it('says what it would acknowledge with --dry-run and writes nothing', async () => {
    const r = await ackLoss('--topic', T, '--dry-run');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      `would acknowledge the loss of ${T} partition 3: offsets 20-39 (20 records), through offset 39\n`,
    );
    expect(existsSync(ackFile())).toBe(false);
  });

  it('refuses a partition that is not a number, and a missing --topic (exit 2)', async () => {
    expect((await ackLoss('--topic', T, '--partition', 'three')).code).toBe(2);
    expect((await ackLoss('--partition', '3')).code).toBe(2);
  });

  it('writes the acknowledgement with who and why, once; then there is nothing left to acknowledge', async () => {
    const other = await ackLoss('--topic', T, '--partition', '4', '--fail-if-empty');
    expect(other.code).toBe(3);
    expect(other.stdout).toBe(`no unacknowledged loss of ${T} partition 4 in file://${dir}\n`);

    const r = await ackLoss('--topic', T, '--partition', '3', '--note', 'INC-1234', '--json');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { dryRun: boolean; acks: Array<{ path: string }> };
    expect(out).toMatchObject({ dryRun: false, acks: [{ path: lossAckPath(T, 3, 39n) }] });
    const path = lossAckPath(T, 3, 39n);
    expect(parseArchiveJson(LossAckSchema, (await storage.get(path)) as Buffer, path)).toMatchObject({
      topic: T,
      partition: 3,
      through: '39',
      note: 'INC-1234',
      ackedBy: expect.stringMatching(/^cli:/),
    });

    const again = await ackLoss('--topic', T);
    expect(again.code).toBe(0);
    expect(again.stdout).toBe(`no unacknowledged loss of ${T} in file://${dir}\n`);
  });
});

/** The streams role's losses: records that left a followed table's DynamoDB stream before they were read. */
describe('ttlstream archive ack-loss --table', () => {
  let dir: string;
  let losses: ArchiveStreamLosses;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttlstream-cli-ack-stream-loss-'));
    losses = new ArchiveStreamLosses(new FsArchiveStorage(dir), silentLogger, () => 1_800_000_000_000);
    await losses.report({
      table: 'sessions',
      arn: 'arn:aws:dynamodb:us-east-1:123456789012:table/sessions/stream/2026-12-07T00:00:00.000',
      label: '2026-12-07T00:00:00.000',
      shardId: 'shardId-0001',
      after: '100000000000000000042',
      reason: 'trimmed',
    });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const ackLoss = (...args: string[]) => cli(['archive', 'ack-loss', '--archive', `file://${dir}`, ...args]);

  it('lists, then acknowledges the stream losses of the table, once; --topic and --table are one or the other', async () => {
    expect((await metrics.streamsLoss.get()).values.find((v) => v.labels.table === 'sessions')?.value).toBe(
      1,
    );
    expect((await ackLoss('--table', 'sessions', '--topic', 't')).code).toBe(2);
    expect((await ackLoss('--table', 'sessions', '--partition', '1')).code).toBe(2);
    const dry = await ackLoss('--table', 'sessions', '--dry-run');
    expect(dry.code).toBe(0);
    expect(dry.stdout).toBe(
      'would acknowledge 1 stream loss(es) of sessions: shardId-0001 after 100000000000000000042 (trimmed)\n',
    );
    const r = await ackLoss('--table', 'sessions', '--note', 'INC-7');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^acknowledged 1 stream loss\(es\) of sessions: .* \(_stream-loss-ack\/sessions\/\d+\.json\)\n$/,
    );
    // The streams role's gauge (TtlstreamArchiveLoss) follows the archive: 1 before, 0 once acknowledged.
    const gauge = async () =>
      (await metrics.streamsLoss.get()).values.find((v) => v.labels.table === 'sessions')?.value;
    await losses.refresh();
    expect(await gauge()).toBe(0);
    const again = await ackLoss('--table', 'sessions', '--fail-if-empty');
    expect(again.code).toBe(3);
    expect(again.stdout).toBe(`no unacknowledged stream loss of sessions in file://${dir}\n`);
  });
});
