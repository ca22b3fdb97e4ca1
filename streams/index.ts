import {
  DescribeTableCommand,
  ResourceNotFoundException,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { Kafka } from 'kafkajs';
import type { FollowedTable } from '../control/settings-store';
import { ConfigError } from '../core/errors';
import { defaultOwnerId, startLeaseGroup } from '../core/leases';
import type { Logger } from '../core/logger';
import { metrics, tableLabel } from '../core/metrics';
import { Publisher } from '../pipeline/publisher';
import { streamSchemaIdsFor } from '../schemas/schema-ids';
import { ensureInternalTable } from '../core/tables';
import { CheckpointStore } from './checkpoints';
import { Discovery } from './discovery';
import { LagBoard } from './lag';
import type { StreamLossSink } from './loss';
import type { StreamsOptions } from './options';
import { readShard } from './shard-reader';
import { fixOf, problemOf, shardApiOf } from './source';

export { streamsOptionsFrom, type StreamsInput, type StreamsOptions } from './options';
export { ArchiveStreamLosses, type StreamLossSink } from './loss';

/**
 * The streams role: follows the DynamoDB Streams of the tables whose expired items DynamoDB's own TTL deletes
 * (`deleter: dynamodb`), and publishes their TTL deletions to the stream topics in the contract's shape, as the
 * deleter publishes its own: same topics, keys, encodings and registry framing, so the archiver, audit, restore,
 * replay and erasure work on them unchanged. Shards are leased in the control table (several instances share a
 * table's shards; a dead one's are taken over), read child after parent, and checkpointed after each publish.
 */
export interface StreamsDeps {
  /** The followed tables' DescribeTable, and the control table (leases, checkpoints). */
  ddb: DynamoDBClient;
  streams: DynamoDBStreamsClient;
  kafka: Kafka;
  settingsStore: { followedTables(): Promise<FollowedTable[]> };
  losses: StreamLossSink;
  logger: Logger;
  options: StreamsOptions;
  ownerId?: string;
}

export interface RunningStreams {
  stop(): Promise<void>;
  /** The shards this process reads now (tests, status). */
  held(): string[];
}

const LAG_REFRESH_MS = 1000;
const LOSS_REFRESH_MS = 60_000;

export async function startStreams(deps: StreamsDeps): Promise<RunningStreams> {
  const { options } = deps;
  const logger = deps.logger.child({ component: 'streams' });
  await refuseStreamsThatCannotWork(deps);
  await ensureInternalTable(deps.ddb, options.controlTable);
  const publisher = await connectedPublisher(deps, logger);
  const checkpoints = new CheckpointStore(deps.ddb, options.controlTable);
  const api = shardApiOf(deps.streams);
  const lag = new LagBoard();
  const discovery = new Discovery({
    ddb: deps.ddb,
    streams: deps.streams,
    checkpoints,
    losses: deps.losses,
    followed: () => deps.settingsStore.followedTables(),
    logger,
    startPosition: options.startPosition,
  });
  await discovery
    .fresh(options.discoverMs)
    .catch((err: unknown) => logger.warn({ err }, 'first discovery round failed; trying again'));
  const group = startLeaseGroup({
    ddb: deps.ddb,
    table: options.controlTable,
    kind: 'streams',
    ownerId: deps.ownerId ?? defaultOwnerId(),
    leaseMs: options.leaseMs,
    logger,
    names: async () => {
      await discovery.fresh(options.discoverMs);
      return discovery.units();
    },
    work: async (lease) => {
      const task = discovery.task(lease.name);
      if (!task) return;
      await readShard(task, lease, {
        api,
        publisher,
        checkpoints,
        lag,
        losses: deps.losses,
        logger,
        options: {
          pollMs: options.pollMs,
          maxRecords: options.maxRecords,
          removes: options.removes,
          deadLetterTopic: options.stream.topics.deadLetter,
        },
        // Its children may be read now: the next tick looks again.
        onEnded: () => discovery.invalidate(),
      });
    },
    onHeld: (held) => countHeld(held, discovery),
  });
  const lagTimer = setInterval(() => {
    for (const [table, seconds] of lag.lagSeconds(Date.now()))
      metrics.streamsLagSeconds.set({ table: tableLabel(table) }, seconds);
  }, LAG_REFRESH_MS);
  // The loss alert follows the archive from the start: a restarted replica reports an unacknowledged loss at once.
  void deps.losses.refresh();
  const lossTimer = setInterval(() => void deps.losses.refresh(), LOSS_REFRESH_MS);
  lagTimer.unref();
  lossTimer.unref();
  return {
    held: () => group.held(),
    async stop() {
      clearInterval(lagTimer);
      clearInterval(lossTimer);
      await group.stop();
      await publisher.disconnect();
    },
  };
}

/** The deleter's publisher, counting what it publishes as the streams role's. */
async function connectedPublisher(deps: StreamsDeps, logger: Logger): Promise<Publisher> {
  const { options } = deps;
  const schemaIds = streamSchemaIdsFor(options.schemaRegistry, logger);
  const publisher = new Publisher(deps.kafka, options.stream, logger, {
    ...(schemaIds ? { schemaIds } : {}),
    onPublished: (m) => {
      if (m.topic !== options.stream.topics.deadLetter)
        metrics.streamsPublished.inc({ table: tableLabel(m.table) });
    },
  });
  await publisher.connect();
  return publisher;
}

function countHeld(held: readonly string[], discovery: Discovery): void {
  const byTable = new Map<string, number>();
  for (const unit of held) {
    const table = discovery.task(unit)?.table;
    if (table !== undefined) byTable.set(table, (byTable.get(table) ?? 0) + 1);
  }
  metrics.streamsShardsHeld.reset();
  for (const [table, n] of byTable) metrics.streamsShardsHeld.set({ table: tableLabel(table) }, n);
}

/**
 * At start: a table DynamoDB's TTL deletes from, whose stream cannot give its deletions, stops the start with one line
 * naming the table and the fix (exit 2). While running the same is a metric (`ttlstream_streams_problem`) and a log.
 */
async function refuseStreamsThatCannotWork(deps: StreamsDeps): Promise<void> {
  const problems: string[] = [];
  for (const { table, draining } of await deps.settingsStore.followedTables()) {
    if (draining) continue;
    try {
      const t = (await deps.ddb.send(new DescribeTableCommand({ TableName: table }))).Table;
      const problem = problemOf(t?.StreamSpecification);
      if (problem) problems.push(`table ${table}: ${fixOf(problem, table)}`);
    } catch (err) {
      if (!(err instanceof ResourceNotFoundException)) throw err;
    }
  }
  if (problems.length > 0)
    throw new ConfigError(
      `streams: ${problems.join('; ')}; or give the table back to ttlstream's deleter (ttlstream ttl update --table <table> --enable ... --deleter ttlstream)`,
    );
}
