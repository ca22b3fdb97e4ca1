/**
 * The streams role's rate from a DynamoDB stream to Kafka, beside the raw limit of the same run (bench/README.md).
 *
 *   npx tsx bench/streams.ts [--items 20000] [--rounds 3] [--keep]
 *
 * On the local stack's moto server (DynamoDB and DynamoDB Streams on one port) it writes `--items` items to a table
 * with a stream (OLD_IMAGE), then deletes them: 2 × items stream records, half of them REMOVEs. Then, `--rounds`
 * times, alternating which goes first:
 *   - raw: GetShardIterator from the trim horizon and GetRecords (1000 a page) to the stream's end, each page's
 *     REMOVE records produced to a topic as JSON by one idempotent kafkajs producer (acks -1): the least any reader of
 *     the stream that publishes its deletions pays;
 *   - streams: the real role (`startStreams`, in this process) on a fresh control table and topic, from its start
 *     until every REMOVE is published: discovery, the shard lease, contract validation, the Avro encoding,
 *     checkpoints in the control table.
 * Reports REMOVE records per second of each, streams ÷ raw (target ≥ 0.7), and the CPU per record of this process,
 * moto and Kafka. moto never writes DynamoDB's TTL identity, so the role takes every REMOVE (`streams.removes: all`),
 * as the integration tests do.
 */
import {
  BatchWriteItemCommand,
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, type DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import type { Kafka } from 'kafkajs';
import { TtlSettingsStore } from '../control/settings-store';
import { loadConfig, type TtlstreamConfig } from '../core/config';
import { createDynamoClient, createKafka, createStreamsClient } from '../core/clients';
import { exitAfterOutput } from '../core/exit';
import { silentLogger } from '../core/logger';
import { metrics } from '../core/metrics';
import { applyTopics, declaredTopics } from '../core/topics';
import { startStreams, streamsOptionsFrom } from '../streams';
import { shardApiOf } from '../streams/source';
import { motoEndpoint } from '../test/support/ports';
import { measureCpu, stackServicePid } from './proc-cpu';

const { values } = parseArgs({
  options: {
    items: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '3' },
    keep: { type: 'boolean', default: false },
  },
});
const ITEMS = Number(values.items);
const ROUNDS = Number(values.rounds);
const RUN = Date.now().toString(36);

interface Lap {
  kind: 'raw' | 'streams';
  records: number;
  ms: number;
  cpu: Record<string, number | null>;
  machineBusySeconds: number | null;
}

async function seed(ddb: DynamoDBClient, table: string): Promise<void> {
  await ddb.send(
    new CreateTableCommand({
      TableName: table,
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      BillingMode: 'PAY_PER_REQUEST',
      StreamSpecification: { StreamEnabled: true, StreamViewType: 'OLD_IMAGE' },
    }),
  );
  const body = 'x'.repeat(400);
  for (const op of ['put', 'delete'] as const)
    for (let i = 0; i < ITEMS; i += 25) {
      const keys = Array.from({ length: Math.min(25, ITEMS - i) }, (_, j) => `item-${i + j}`);
      await ddb.send(
        new BatchWriteItemCommand({
          RequestItems: {
            [table]: keys.map((pk) =>
              op === 'put'
                ? { PutRequest: { Item: { pk: { S: pk }, expiresAt: { N: '1000' }, body: { S: body } } } }
                : { DeleteRequest: { Key: { pk: { S: pk } } } },
            ),
          },
        }),
      );
    }
}

function timed(kind: Lap['kind'], cpuOf: () => Record<string, number | null>) {
  const end = measureCpu(cpuOf);
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  return (records: number): Lap => {
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    const own = process.cpuUsage(cpu0);
    const span = end();
    return {
      kind,
      records,
      ms,
      cpu: { bench: (own.user + own.system) / 1e6, ...span.seconds },
      machineBusySeconds: span.machineBusySeconds,
    };
  };
}

/** The raw loop: the stream read to its end, its REMOVE records produced as JSON. */
async function raw(
  streams: DynamoDBStreamsClient,
  kafka: Kafka,
  arn: string,
  topic: string,
): Promise<number> {
  const api = shardApiOf(streams);
  const shards =
    (await streams.send(new DescribeStreamCommand({ StreamArn: arn }))).StreamDescription?.Shards ?? [];
  const producer = kafka.producer({ idempotent: true, allowAutoTopicCreation: false });
  await producer.connect();
  let removes = 0;
  try {
    for (const shard of shards) {
      let it: string | undefined = await api.shardIterator({
        StreamArn: arn,
        ShardId: shard.ShardId,
        ShardIteratorType: 'TRIM_HORIZON',
      });
      let read = 0;
      while (it !== undefined && read < 2 * ITEMS) {
        const page = await api.records(it, 1000);
        const records = page.Records ?? [];
        read += records.length;
        const messages = records
          .filter((r) => r.eventName === 'REMOVE')
          .map((r) => ({ key: r.dynamodb?.Keys?.pk?.S ?? '', value: JSON.stringify(r) }));
        if (messages.length > 0) await producer.send({ topic, acks: -1, messages });
        removes += messages.length;
        it = page.NextShardIterator;
      }
    }
  } finally {
    await producer.disconnect();
  }
  return removes;
}

/** The streams role on a fresh control table and topic, until every REMOVE of the table is published. */
async function ours(
  config: TtlstreamConfig,
  ddb: DynamoDBClient,
  streams: DynamoDBStreamsClient,
  kafka: Kafka,
  table: string,
): Promise<number> {
  const published = async (): Promise<number> =>
    (await metrics.streamsPublished.get()).values.find((v) => v.labels.table === table)?.value ?? 0;
  const before = await published();
  const store = new TtlSettingsStore(ddb, { controlTable: config.tables.control, propagationMs: 0 });
  const role = await startStreams({
    ddb,
    streams,
    kafka,
    settingsStore: store,
    losses: { report: async () => undefined, refresh: async () => undefined },
    logger: silentLogger,
    options: streamsOptionsFrom(config),
  });
  try {
    while ((await published()) - before < ITEMS) await new Promise((r) => setTimeout(r, 20));
  } finally {
    await role.stop();
  }
  return (await published()) - before;
}

async function main(): Promise<void> {
  const base = loadConfig({
    overrides: { dynamodb: { endpoint: motoEndpoint() }, log: { level: 'silent' } },
  });
  const ddb = createDynamoClient(base);
  const streamsClient = createStreamsClient(base);
  const kafka = createKafka(base, silentLogger, 'bench-streams');
  const table = `bench-streams-${RUN}`;
  process.stderr.write(`seeding ${ITEMS} items and their deletions on moto (${motoEndpoint()})\n`);
  const seedStart = Date.now();
  await seed(ddb, table);
  process.stderr.write(`seeded in ${((Date.now() - seedStart) / 1000).toFixed(1)} s\n`);
  const arn = (await ddb.send(new DescribeTableCommand({ TableName: table }))).Table?.LatestStreamArn ?? '';
  const admin = kafka.admin();
  await admin.connect();
  const cpuOf = () => ({ moto: stackServicePid('moto'), kafka: stackServicePid('kafka') });
  const laps: Lap[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const order: Array<Lap['kind']> = round % 2 === 0 ? ['raw', 'streams'] : ['streams', 'raw'];
      for (const kind of order) {
        const topic = `bench-streams-${kind}-${RUN}-${round}`;
        const config = loadConfig({
          overrides: {
            dynamodb: { endpoint: motoEndpoint() },
            log: { level: 'silent' },
            tables: { control: `bench-streams-ctl-${RUN}-${round}`, marks: `bench-streams-marks-${RUN}` },
            topics: { shared: topic },
            streams: { removes: 'all', discoverMs: 500, pollMs: 100 },
          },
        });
        await applyTopics(admin, declaredTopics(config, [table]));
        if (kind === 'streams') {
          const store = new TtlSettingsStore(ddb, { controlTable: config.tables.control, propagationMs: 0 });
          await store.update(
            table,
            {
              enabled: true,
              settings: { policy: { mode: 'dynamodb', attributeName: 'expiresAt' }, deleter: 'dynamodb' },
            },
            'bench',
          );
        }
        const lap = timed(kind, cpuOf);
        const records =
          kind === 'raw'
            ? await raw(streamsClient, kafka, arn, topic)
            : await ours(config, ddb, streamsClient, kafka, table);
        laps.push(lap(records));
        process.stderr.write(
          `round ${round + 1} ${kind}: ${records} records in ${(laps.at(-1)!.ms / 1000).toFixed(2)} s\n`,
        );
        await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
      }
    }
  } finally {
    await admin.disconnect();
    if (!values.keep) await ddb.send(new DeleteTableCommand({ TableName: table })).catch(() => undefined);
  }
  report(laps);
  ddb.destroy();
  streamsClient.destroy();
}

function report(laps: Lap[]): void {
  const best = (kind: Lap['kind']): Lap =>
    laps.filter((l) => l.kind === kind).reduce((a, b) => (b.records / b.ms > a.records / a.ms ? b : a));
  const rate = (l: Lap): number => (l.records / l.ms) * 1000;
  const perRecordUs = (l: Lap, who: string): number | null => {
    const s = l.cpu[who];
    return s === null || s === undefined ? null : (s / l.records) * 1e6;
  };
  const r = best('raw');
  const s = best('streams');
  const rows = [
    ['', 'records/s', 'bench µs/rec', 'moto µs/rec', 'kafka µs/rec'],
    ...[r, s].map((l) => [
      l.kind,
      rate(l).toFixed(0),
      ...['bench', 'moto', 'kafka'].map((w) => perRecordUs(l, w)?.toFixed(0) ?? '-'),
    ]),
  ];
  for (const row of rows)
    process.stdout.write(row.map((c, i) => (i === 0 ? c.padEnd(8) : c.padStart(13))).join('') + '\n');
  process.stdout.write(`streams ÷ raw: ${(rate(s) / rate(r)).toFixed(2)} (target ≥ 0.7)\n`);
  process.stdout.write(
    JSON.stringify({
      bench: 'streams',
      items: ITEMS,
      rounds: ROUNDS,
      raw: {
        recordsPerSecond: rate(r),
        cpuUsPerRecord: {
          bench: perRecordUs(r, 'bench'),
          moto: perRecordUs(r, 'moto'),
          kafka: perRecordUs(r, 'kafka'),
        },
      },
      streams: {
        recordsPerSecond: rate(s),
        cpuUsPerRecord: {
          bench: perRecordUs(s, 'bench'),
          moto: perRecordUs(s, 'moto'),
          kafka: perRecordUs(s, 'kafka'),
        },
      },
      ratio: rate(s) / rate(r),
      laps,
      loadavg: loadavg(),
    }) + '\n',
  );
}

main().then(
  () => exitAfterOutput(0),
  (err: unknown) => {
    process.stderr.write(
      `bench/streams.ts failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    exitAfterOutput(1);
  },
);
