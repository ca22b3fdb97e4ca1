import {
  DescribeTableCommand,
  ResourceNotFoundException,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import type { Kafka } from 'kafkajs';
import { createDynamoClient, createKafka } from '../../../core/clients';
import { GuardStore } from '../../../pipeline/guard/store';
import { createTestTable, deleteTestTable, testConfig, uniqueName } from '../../support/stack';
import { humanLines, runCli } from '../../support/cli-process';

const esc = (s: string): string => s.replace(/[.-]/g, '\\$&');

/** `ttlstream topics apply` against the real broker and `ttlstream guard …` against the real control table. */
describe('ttlstream topics / guard', () => {
  const topic = uniqueName('cli-topics');
  const control = uniqueName('cli-guard-ctl');
  const marks = uniqueName('cli-guard-marks');
  const env = {
    TTLSTREAM_TOPICS_SHARED: topic,
    TTLSTREAM_TOPICS_DEAD_LETTER: `${topic}-dlq`,
    TTLSTREAM_TOPICS_PARTITIONS: '2',
    TTLSTREAM_TABLES_CONTROL: control,
    TTLSTREAM_TABLES_MARKS: marks,
  };
  let ddb: DynamoDBClient;
  let kafka: Kafka;
  let table: string;

  beforeAll(async () => {
    const config = testConfig();
    ddb = createDynamoClient(config);
    kafka = createKafka(config);
    table = await createTestTable(ddb, uniqueName('cli-guard'));
  });
  afterAll(async () => {
    for (const t of [table, control, marks]) await deleteTestTable(ddb, t);
    ddb.destroy();
  });

  it('topics apply --dry-run changes nothing; apply creates once; then reports what the broker has', async () => {
    const dry = await runCli(['topics', 'apply', '--dry-run'], env);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(new RegExp(`^${esc(topic)}\\s+-\\s+-\\s+would create$`, 'm'));
    const probe = kafka.admin();
    await probe.connect();
    expect(await probe.listTopics()).not.toContain(topic);
    await probe.disconnect();

    const first = await runCli(['topics', 'apply', '--json'], env);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({
      topics: [topic, `${topic}-dlq`],
      created: [topic, `${topic}-dlq`],
    });
    const admin = kafka.admin();
    await admin.connect();
    const meta = await admin.fetchTopicMetadata({ topics: [topic] });
    const configs = await admin.describeConfigs({
      resources: [{ type: 2, name: topic, configNames: ['retention.ms'] }],
      includeSynonyms: false,
    });
    await admin.disconnect();
    expect(meta.topics[0]?.partitions).toHaveLength(2);
    expect(
      configs.resources[0]?.configEntries.find((e) => e.configName === 'retention.ms')?.configValue,
    ).toBe('86400000');

    const second = await runCli(['topics', 'apply'], env);
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(new RegExp(`^${esc(topic)}\\s+2\\s+1\\s+settings as declared$`, 'm'));
    const described = await runCli(['topics', 'describe', '--json'], env);
    expect(JSON.parse(described.stdout)).toContainEqual(
      expect.objectContaining({ topic, partitions: 2, replicationFactor: 1, settingsDrift: [] }),
    );
  });

  it('topics apply never says a topic is fine when its partition count differs', async () => {
    const other = uniqueName('cli-topics-3p');
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: other, numPartitions: 3, replicationFactor: 1 }] });
    await admin.disconnect();
    const otherEnv = { ...env, TTLSTREAM_TOPICS_SHARED: other, TTLSTREAM_TOPICS_DEAD_LETTER: `${other}-dlq` };
    const r = await runCli(['topics', 'apply'], otherEnv);
    expect(r.code).toBe(0);
    // Its settings were brought in line (a bare topic has none of ours), but 3 partitions stay 3.
    expect(r.stdout).toMatch(
      new RegExp(`^${esc(other)}\\s+3\\s+1\\s+settings updated; differs \\(see below\\)$`, 'm'),
    );
    expect(humanLines(r.stderr)).toEqual([
      `ttlstream: warning: ${other} has 3 partitions, 2 declared (left as is: repartitioning breaks per-item order)`,
    ]);
    const d = await runCli(['topics', 'describe'], otherEnv);
    expect(d.stdout).toMatch(new RegExp(`^${esc(other)}\\s+3\\s+1\\s+3 partitions, 2 declared`, 'm'));
  });

  it('read-only commands never create the control table', async () => {
    const missingControl = uniqueName('cli-ro-ctl');
    const roEnv = { ...env, TTLSTREAM_TABLES_CONTROL: missingControl };
    for (const args of [
      ['ttl', 'list'],
      ['ttl', 'describe', '--table', table],
      ['guard', 'status', '--table', table],
    ]) {
      const r = await runCli(args, roEnv);
      expect({ args, code: r.code, stderr: humanLines(r.stderr) }).toEqual({ args, code: 0, stderr: [] });
    }
    await expect(ddb.send(new DescribeTableCommand({ TableName: missingControl }))).rejects.toBeInstanceOf(
      ResourceNotFoundException,
    );
  });

  it('guard: NOT GUARDED for TTL off and own tables; cancel/confirm only on a paused table', async () => {
    const off = await runCli(['guard', 'status', '--table', table, '--json'], env);
    expect(off.code).toBe(0);
    expect(JSON.parse(off.stdout)).toMatchObject({ table, state: 'NOT_GUARDED', ttl: 'DISABLED' });

    const enable = await runCli(['ttl', 'update', '--table', table, '--enable', '--attribute', 'exp'], env);
    expect(enable.code).toBe(0);
    const own = await runCli(['guard', 'status', '--table', control], env);
    expect(own.stdout).toMatch(/^state\s+NOT GUARDED \(ttlstream's own table/m);

    const status = await runCli(['guard', 'status', '--table', table, '--json'], env);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toEqual({ table, state: 'ARMED', cancelled: false });

    // A healthy table: cancel used to pause it. Both are refused and change nothing.
    for (const verb of ['cancel', 'confirm']) {
      const r = await runCli(['guard', verb, '--table', table], env);
      expect(r.code).toBe(1);
      expect(humanLines(r.stderr)).toEqual([
        `ttlstream: guard ${verb}: ${table} is not paused (its guard is ARMED); only a table the guard paused can be ${verb}ed`,
      ]);
    }
    expect(JSON.parse((await runCli(['guard', 'status', '--table', table, '--json'], env)).stdout)).toEqual({
      table,
      state: 'ARMED',
      cancelled: false,
    });

    await new GuardStore(ddb, control).pause(table, 'test: 90% of the table expired at once');
    const cancel = await runCli(['guard', 'cancel', '--table', table, '--json'], env);
    expect(cancel.code).toBe(0);
    expect(JSON.parse(cancel.stdout)).toMatchObject({
      guard: {
        table,
        state: 'PAUSED',
        cancelled: true,
        reason: 'test: 90% of the table expired at once',
        cancelledBy: expect.stringMatching(/^cli:/),
      },
      discardedMarks: 0,
    });

    const paused = await runCli(['guard', 'status', '--table', table], env);
    expect(paused.stdout).toMatch(/^state\s+PAUSED \(cancelled/m);

    const confirm = await runCli(['guard', 'confirm', '--table', table, '--json'], env);
    expect(confirm.code).toBe(0);
    expect(JSON.parse(confirm.stdout)).toMatchObject({ table, state: 'CONFIRMED', cancelled: false });
    const again = await runCli(['guard', 'confirm', '--table', table], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('is not paused (its guard is CONFIRMED)');

    const missing = await runCli(['guard', 'status', '--table', uniqueName('cli-missing')], env);
    expect(missing.code).toBe(1);
    expect(humanLines(missing.stderr)).toEqual([expect.stringMatching(/^ttlstream: .*not found/)]);
  });
});
