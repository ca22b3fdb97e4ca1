import { PutItemCommand, ScanCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDynamoClient, createKafka } from '../../../core/clients';
import { decodeMessage } from '../../../schemas';
import { createTestTable, deleteTestTable, testConfig, uniqueName } from '../../support/stack';
import type { SecuredListener } from '../../support/ports';
import { linesBeyondKafkaRetries, runCli, spawnCli } from '../../support/cli-process';
import { listenerEnv } from './listeners.support';
import { filesUnder } from '../../support/files';

/**
 * The whole pipeline over each secured listener of the stack, configured only with the documented
 * settings (CA file; SCRAM user, client certificate or token command): `topics apply`, then `run` deletes the
 * expired items, their REMOVE records are read back over the same listener, and the archiver writes them to a
 * file. Names are unique, so the listeners run concurrently with each other and with other suites.
 */
describe('the pipeline over a secured Kafka listener', () => {
  // Made here, not in beforeAll: jest starts concurrent tests before beforeAll hooks run.
  const ddb: DynamoDBClient = createDynamoClient(testConfig());
  afterAll(() => ddb.destroy());

  it.concurrent.each<SecuredListener>(['scram', 'mtls', 'oauth'])(
    '%s: delete, REMOVE record, archive',
    async (listener) => {
      const table = uniqueName(`sec-${listener}`);
      const topic = uniqueName(`sec-${listener}-rm`);
      const archiveDir = mkdtempSync(join(tmpdir(), `ttlstream-sec-${listener}-`));
      const env: NodeJS.ProcessEnv = {
        ...listenerEnv(listener),
        TTLSTREAM_LOG_LEVEL: 'warn',
        TTLSTREAM_TABLES_CONTROL: uniqueName(`sec-${listener}-ctl`),
        TTLSTREAM_TABLES_MARKS: uniqueName(`sec-${listener}-marks`),
        TTLSTREAM_TOPICS_SHARED: topic,
        TTLSTREAM_TOPICS_DEAD_LETTER: `${topic}-dlq`,
        TTLSTREAM_TOPICS_PARTITIONS: '1',
        TTLSTREAM_ARCHIVE_URL: `file://${archiveDir}`,
        TTLSTREAM_ARCHIVE_GROUP_ID: `${topic}-archiver`,
        TTLSTREAM_ARCHIVE_ROLL_MS: '1000',
        TTLSTREAM_API_TTL_PROPAGATION_MS: '0',
        TTLSTREAM_SCANNER_TOTAL_SEGMENTS: '1',
        TTLSTREAM_SCANNER_PASS_INTERVAL_MS: '200',
        TTLSTREAM_PRODUCER_SHARDS: '1',
        TTLSTREAM_PRODUCER_POLL_MS: '50',
        TTLSTREAM_GUARD_MIN_ITEMS_FOR_FRACTION: '1000000',
      };
      await createTestTable(ddb, table);
      const child = { current: undefined as ReturnType<typeof spawnCli> | undefined };
      try {
        expect(
          (await runCli(['ttl', 'update', '--table', table, '--enable', '--attribute', 'exp'], env)).code,
        ).toBe(0);
        const apply = await runCli(['topics', 'apply'], env);
        expect({ code: apply.code, stderr: linesBeyondKafkaRetries(apply.stderr) }).toEqual({
          code: 0,
          stderr: [],
        });
        const past = String(Math.floor(Date.now() / 1000) - 60);
        for (const id of ['a', 'b', 'c'])
          await ddb.send(new PutItemCommand({ TableName: table, Item: { pk: { S: id }, exp: { N: past } } }));

        child.current = spawnCli(['run', '--roles', 'archiver,producer,scanner'], env);
        const running = child.current;
        const untilSeen = async (what: string, check: () => Promise<boolean> | boolean): Promise<void> => {
          const deadline = Date.now() + 60_000;
          while (!(await check())) {
            if (Date.now() > deadline || running.exitCode !== null)
              throw new Error(`${listener}: ${what} not seen\n${running.output().slice(-3000)}`);
            await sleep(100);
          }
        };
        await untilSeen('the deletions', async () => {
          const page = await ddb.send(new ScanCommand({ TableName: table, ConsistentRead: true }));
          return (page.Items ?? []).length === 0;
        });

        // The REMOVE records, read back over the same listener with the same settings.
        const previous = { ...process.env };
        Object.assign(process.env, env);
        const config = testConfig();
        process.env = previous;
        const consumer = createKafka(config, undefined, 'sec-test').consumer({
          groupId: uniqueName(`sec-${listener}-g`),
        });
        const keys: string[] = [];
        try {
          await consumer.connect();
          await consumer.subscribe({ topic, fromBeginning: true });
          await consumer.run({
            eachMessage: async ({ message }) => {
              const decoded = decodeMessage(message.value, message.headers ?? {});
              if (decoded.kind === 'remove') keys.push(decoded.record.dynamodb.Keys.pk?.S ?? '');
            },
          });
          await untilSeen('three REMOVE records', () => keys.length >= 3);
        } finally {
          await consumer.disconnect();
        }
        expect(keys.sort()).toEqual(['a', 'b', 'c']);

        await untilSeen('an archive file', () => filesUnder(archiveDir).some((f) => f.endsWith('.avro')));
        running.kill('SIGTERM');
        const result = await running.result;
        expect(result.code).toBe(0);
      } finally {
        if (child.current && child.current.exitCode === null) {
          child.current.kill('SIGKILL');
          await child.current.result;
        }
        for (const t of [table, env.TTLSTREAM_TABLES_CONTROL ?? '', env.TTLSTREAM_TABLES_MARKS ?? ''])
          await deleteTestTable(ddb, t);
        rmSync(archiveDir, { recursive: true, force: true });
      }
    },
  );
});
