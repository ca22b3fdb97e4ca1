import {
  ExpiredIteratorException,
  ResourceNotFoundException,
  TrimmedDataAccessException,
  type ShardIteratorType,
  type _Record as StreamsApiRecord,
} from '@aws-sdk/client-dynamodb-streams';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LeaseHandle } from '../core/leases';
import type { Logger } from '../core/logger';
import { errorLabel, metrics } from '../core/metrics';
import { isRetryable, withRetry } from '../core/retry';
import { PoisonRecordError } from '../schemas';
import { DLQ_HEADERS, STREAM_DLQ_HEADERS } from '../schemas/headers';
import { DataError } from '../core/errors';
import type { Outgoing, Prepared } from '../pipeline/publisher';
import type { ShardApi } from './source';
import type { LagBoard } from './lag';
import type { Checkpoint, ShardRef } from './lineage';
import type { StreamLossSink } from './loss';
import { outcomeOf, type RemovesTaken } from './record';

/** One shard to read, as the discovery round found it: where, and from where. */
export interface ShardTask extends ShardRef {
  table: string;
  /** The lease unit's name (streams/index.ts). */
  unit: string;
  /** The shard takes no more records: an empty read does not mean caught up. */
  closed: boolean;
  checkpoint: Checkpoint | undefined;
}

/** A page of a shard, as GetRecords gives it. */
type Page = Awaited<ReturnType<ShardApi['records']>>;

export interface ShardReaderDeps {
  api: ShardApi;
  /** pipeline/publisher.ts Publisher: encodes (validating against the contract) and publishes. */
  publisher: { prepare(m: Outgoing): Prepared; publish(messages: Prepared[]): Promise<void> };
  /** streams/checkpoints.ts CheckpointStore. */
  checkpoints: { save(table: string, label: string, shardId: string, cp: Checkpoint): Promise<void> };
  lag: LagBoard;
  losses: StreamLossSink;
  logger: Logger;
  options: { pollMs: number; maxRecords: number; removes: RemovesTaken; deadLetterTopic: string };
  /** A shard was read to its end: its children may be read now. */
  onEnded(task: ShardTask): void;
}

/** Where the reader stands in its shard: after this sequence number, or at the trim horizon, or at LATEST. */
type Position = { after: string } | { from: 'TRIM_HORIZON' | 'LATEST' };

function startOf(cp: Checkpoint | undefined): Position {
  if (cp?.sequenceNumber !== undefined) return { after: cp.sequenceNumber };
  return { from: cp?.latest ? 'LATEST' : 'TRIM_HORIZON' };
}

/**
 * Read a shard under its lease until the lease ends or the shard is read to its end: each page's REMOVE records are
 * published (acknowledged by every in-sync replica) before the checkpoint moves past them, so a reader killed between
 * the two publishes them again under the same eventIDs (at least once; consumers de-duplicate by eventID). Records
 * that left the stream before they were read are reported as loss, never skipped silently.
 */
export async function readShard(task: ShardTask, lease: LeaseHandle, deps: ShardReaderDeps): Promise<void> {
  const log = deps.logger.child({ table: task.table, shard: task.shardId, stream: task.label });
  let position = startOf(task.checkpoint);
  let lastEmptyReadAt = Date.now();
  try {
    let iterator = await openIterator(task, position, deps, log);
    while (!lease.signal.aborted) {
      let page: Page;
      try {
        page = await getRecords(task, iterator, lease, deps);
      } catch (err) {
        if (err instanceof ExpiredIteratorException) {
          iterator = await openIterator(task, position, deps, log);
          continue;
        }
        if (err instanceof TrimmedDataAccessException) {
          position = await reportTrimmed(task, position, deps, log);
          iterator = await openIterator(task, position, deps, log);
          continue;
        }
        // The stream is gone: discovery reports what was not read of it.
        if (err instanceof ResourceNotFoundException) return;
        if (!lease.signal.aborted) deps.lag.unsure(task.unit, task.table, lastEmptyReadAt);
        throw err;
      }
      const records = page.Records ?? [];
      if (records.length > 0) position = await publishPage(task, records, lease, deps);
      if (page.NextShardIterator === undefined) {
        lease.assertValid();
        await deps.checkpoints.save(task.table, task.label, task.shardId, {
          ...checkpointAt(position),
          ended: true,
        });
        deps.lag.caughtUp(task.unit, task.table);
        log.info('shard read to its end');
        deps.onEnded(task);
        return;
      }
      iterator = page.NextShardIterator;
      if (records.length === 0 && !task.closed) {
        deps.lag.caughtUp(task.unit, task.table);
        lastEmptyReadAt = Date.now();
        await sleep(deps.options.pollMs, undefined, { signal: lease.signal }).catch(() => undefined);
      }
    }
  } finally {
    deps.lag.drop(task.unit);
  }
}

function checkpointAt(position: Position): Checkpoint {
  return 'after' in position ? { sequenceNumber: position.after, ended: false } : { ended: false };
}

async function openIterator(
  task: ShardTask,
  position: Position,
  deps: ShardReaderDeps,
  log: Logger,
): Promise<string> {
  const at: { ShardIteratorType: ShardIteratorType; SequenceNumber?: string } =
    'after' in position
      ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: position.after }
      : { ShardIteratorType: position.from };
  try {
    return await deps.api.shardIterator({ StreamArn: task.arn, ShardId: task.shardId, ...at });
  } catch (err) {
    if (!(err instanceof TrimmedDataAccessException)) throw err;
    // The checkpoint is older than the stream's 24 hours: what followed it is gone.
    return openIterator(task, await reportTrimmed(task, position, deps, log), deps, log);
  }
}

async function reportTrimmed(
  task: ShardTask,
  position: Position,
  deps: ShardReaderDeps,
  log: Logger,
): Promise<Position> {
  const after = 'after' in position ? position.after : undefined;
  log.error({ after }, 'STREAM LOSS: records left the stream before they were read');
  await deps.losses.report({ ...task, ...(after !== undefined ? { after } : {}), reason: 'trimmed' });
  return { from: 'TRIM_HORIZON' };
}

/** GetRecords, retried with back-off while the lease lasts; the errors the reader handles itself are thrown at once. */
function getRecords(
  task: ShardTask,
  iterator: string,
  lease: LeaseHandle,
  deps: ShardReaderDeps,
): Promise<Page> {
  return withRetry(() => deps.api.records(iterator, deps.options.maxRecords), {
    retries: Infinity,
    signal: lease.signal,
    initialDelayMs: 200,
    maxDelayMs: 10_000,
    isRetryable: (err) =>
      !(err instanceof ExpiredIteratorException) &&
      !(err instanceof TrimmedDataAccessException) &&
      !(err instanceof ResourceNotFoundException) &&
      (isRetryable(err) || httpStatusOf(err) >= 500),
    onRetry: (err) =>
      metrics.streamsReadErrors.inc({ table: task.table, operation: 'GetRecords', error: errorLabel(err) }),
  });
}

/** The HTTP status of a failed SDK request (0 when it has none): a server's 5xx is worth another try. */
function httpStatusOf(err: unknown): number {
  if (typeof err !== 'object' || err === null || !('$metadata' in err)) return 0;
  const meta = err.$metadata;
  if (typeof meta !== 'object' || meta === null || !('httpStatusCode' in meta)) return 0;
  return typeof meta.httpStatusCode === 'number' ? meta.httpStatusCode : 0;
}

/**
 * Publish a page's records that the contract takes, then move the checkpoint past the whole page (the records not
 * taken included). Returns the new position.
 */
async function publishPage(
  task: ShardTask,
  records: StreamsApiRecord[],
  lease: LeaseHandle,
  deps: ShardReaderDeps,
): Promise<Position> {
  const first = records[0]?.dynamodb?.ApproximateCreationDateTime;
  if (first) deps.lag.behind(task.unit, task.table, first.getTime());
  const out: Prepared[] = [];
  for (const r of records) {
    const outcome = outcomeOf(r, task.arn, deps.options.removes);
    if (outcome.kind !== 'publish') {
      metrics.streamsRecords.inc({ table: task.table, outcome: outcome.kind });
      if (outcome.kind === 'no-old-image')
        deps.logger.error(
          { table: task.table, eventID: r.eventID },
          'a REMOVE without its old image cannot be published: give the stream a view type with old images',
        );
      continue;
    }
    try {
      out.push(deps.publisher.prepare({ kind: 'remove', table: task.table, record: outcome.record }));
      metrics.streamsRecords.inc({ table: task.table, outcome: 'published' });
    } catch (err) {
      if (!(err instanceof PoisonRecordError)) throw err;
      metrics.streamsRecords.inc({ table: task.table, outcome: 'invalid' });
      deps.logger.error(
        { table: task.table, eventID: r.eventID, err },
        'stream record breaks the contract: dead-lettered',
      );
      out.push(deadLetterOf(task, r, err, deps.options.deadLetterTopic));
    }
  }
  await deps.publisher.publish(out);
  const last = records[records.length - 1]?.dynamodb?.SequenceNumber;
  if (last === undefined) throw new DataError(`a record of shard ${task.shardId} has no SequenceNumber`);
  lease.assertValid();
  await deps.checkpoints.save(task.table, task.label, task.shardId, { sequenceNumber: last, ended: false });
  return { after: last };
}

/** A stream record the contract refuses, kept on the dead-letter topic as DynamoDB gave it, with where it came from. */
function deadLetterOf(task: ShardTask, r: StreamsApiRecord, err: PoisonRecordError, topic: string): Prepared {
  return {
    table: task.table,
    kind: 'remove',
    topic,
    message: {
      key: `${task.table}/${r.eventID ?? ''}`,
      value: Buffer.from(
        JSON.stringify(r, (_k, v: unknown) =>
          v instanceof Uint8Array ? Buffer.from(v).toString('base64') : v,
        ),
      ),
      headers: {
        [DLQ_HEADERS.reason]: err.reason,
        [STREAM_DLQ_HEADERS.stream]: task.arn,
        [STREAM_DLQ_HEADERS.shard]: task.shardId,
        [STREAM_DLQ_HEADERS.sequence]: r.dynamodb?.SequenceNumber ?? '',
      },
    },
  };
}
