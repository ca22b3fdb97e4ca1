import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Kafka } from 'kafkajs';
import { defaultOwnerId, startLeaseGroup, type LeaseHandle } from '../core/leases';
import type { Logger } from '../core/logger';
import { metrics } from '../core/metrics';
import { ensureInternalTable } from '../core/tables';
import type { BatchContext } from './batch/runner';
import { EnabledTables, type EnabledTablesSource } from '../pipeline/enabled-tables';
import { GuardGauge, GuardStore } from '../pipeline/guard';
import { SequenceGenerator } from '../pipeline/image';
import { ensureMarksTable } from '../pipeline/marks';
import type { ProducerOptions } from './options';
import { Publisher, type PublisherOptions } from '../pipeline/publisher';
import { streamSchemaIdsFor, type StreamSchemaIds } from '../schemas/schema-ids';
import { Doorbells } from './doorbells';
import { Semaphore } from '../core/concurrency';
import { runShard } from './shard-worker';

export { processBatch, type BatchContext, type BatchStats } from './batch/runner';
export { reconcile, type ReconcileDecision, type ReconcileInput } from './reconcile';
export type { Intent } from './journal';
export { buildRemoveRecord, Publisher, STREAM_ACCOUNT, STREAM_LABEL } from '../pipeline/publisher';
export { producerOptionsFrom, type ProducerInput, type ProducerOptions } from './options';

export interface ProducerDeps {
  /** Its slice of the configuration, resolved at start-up: `producerOptionsFrom(config)`. */
  options: ProducerOptions;
  ddb: DynamoDBClient;
  kafka: Kafka;
  settingsStore: EnabledTablesSource;
  logger: Logger;
  ownerId?: string;
  /** Kafka compression (the benchmark tunes it); none by default. */
  publisher?: PublisherOptions;
}

export interface RunningProducer {
  /** Stop taking batches, finish the in-flight ones, release the shard leases, disconnect. */
  stop(): Promise<void>;
  ownerId: string;
  /** Shards leased now. */
  shards(): string[];
}

const SHARD_PREFIX = 'shard#';
const SETTINGS_REFRESH_MS = 1000;

/**
 * The deleter (docs/decisions/0001-deletion-protocol.md): leases a fair share of the mark shards and, for each,
 * turns marks into published REMOVE records and conditional deletes. In dry-run mode it only evaluates and logs.
 */
export async function startProducer(deps: ProducerDeps): Promise<RunningProducer> {
  const { ddb, kafka, options } = deps;
  const ownerId = deps.ownerId ?? defaultOwnerId();
  const logger = deps.logger.child({ component: 'producer', owner: ownerId });
  await ensureInternalTable(ddb, options.controlTable);
  await ensureMarksTable(ddb, options.marksTable);

  const dryRun = options.dryRun;
  let publisher: Publisher | undefined;
  if (!dryRun) {
    publisher = new Publisher(kafka, options.stream, logger, {
      ...deps.publisher,
      ...withSchemaIds(streamSchemaIdsFor(options.schemaRegistry, logger)),
    });
    await publisher.connect();
    const tables = new EnabledTables(deps.settingsStore, 0);
    // Topics must exist before the first publish; per-table topics of tables enabled later are created on demand.
    await publisher.ensureTopics([...(await tables.get()).keys()]);
  } else {
    logger.warn('dry run: evaluating and logging only; nothing is published or deleted');
  }

  const ctx: BatchContext = {
    options,
    ddb,
    ...(publisher ? { publisher } : {}),
    logger,
    // Settings change with a propagation delay (ENABLING/DISABLING) of seconds; re-reading once a second is enough.
    tables: new EnabledTables(deps.settingsStore, SETTINGS_REFRESH_MS),
    guard: new GuardStore(ddb, options.controlTable),
    deletes: new Semaphore(options.concurrency),
    bells: new Doorbells(ddb, options.marksTable, options.pollMs),
    sequences: new SequenceGenerator(),
    now: Date.now,
    reported: new Set(),
  };

  const shardNames = Array.from({ length: options.shards }, (_, i) => `${SHARD_PREFIX}${i}`);
  const leases = startLeaseGroup({
    ddb,
    table: options.controlTable,
    kind: 'marks',
    ownerId,
    leaseMs: options.leaseMs,
    logger,
    names: () => shardNames,
    work: oneWorkerPerShard(ctx),
    onHeld: (held) => metrics.shardsOwned.set(held.length),
  });

  // Every producer reports the stored guard state of every enabled table (pipeline/guard/gauge.ts).
  const guardGauge = new GuardGauge(ctx.guard, async () => (await ctx.tables.get()).keys()).start(
    options.guardGaugeRefreshMs,
    logger,
  );

  logger.info({ shards: options.shards, dryRun }, 'producer started');
  return {
    ownerId,
    shards: () => leases.held(),
    async stop() {
      await guardGauge.stop();
      await leases.stop();
      ctx.bells.close();
      await publisher?.disconnect();
      logger.info('producer stopped');
    },
  };
}

/**
 * The work under a shard's lease. A lease lost while DynamoDB was unreachable can be re-acquired by this process
 * while the old worker's batch is still retrying its requests. Two workers on one shard would each see the other's
 * half-done rows (an INTENT whose item the other just deleted) and retract a real deletion: the new worker waits.
 */
function oneWorkerPerShard(ctx: BatchContext): (lease: LeaseHandle) => Promise<void> {
  const shardRuns = new Map<number, Promise<void>>();
  return (lease) => {
    const shard = Number(lease.name.slice(SHARD_PREFIX.length));
    const previous = shardRuns.get(shard);
    const run = (async () => {
      if (previous) await previous.catch(() => undefined);
      if (!lease.signal.aborted) await runShard(ctx, shard, lease);
    })();
    shardRuns.set(shard, run);
    return run;
  };
}

/** With schemas.registry set, the publisher writes the Confluent wire format (decision 0025). */
function withSchemaIds(schemaIds: StreamSchemaIds | undefined): { schemaIds?: StreamSchemaIds } {
  return schemaIds ? { schemaIds } : {};
}
