import type { Kafka, Message, Producer } from 'kafkajs';
import { NotFoundError, ValidationError } from '../../core/errors';
import { silentLogger, type Logger } from '../../core/logger';
import { encodeRemove, messageKey, type ArchivedRecord } from '../../schemas';
import type { StreamSchemaIds } from '../../schemas/schema-ids';
import { compareVersions, inRange, openCatalog, type CatalogRow } from '../../archive/catalog';
import { HOUR_MS } from '../../archive/catalog/range';
import { REPLAY_HEADER } from '../../schemas/headers';
import { readRemoves } from '../../archive/reader';
import { parseOptions } from '../restore/options';
import type { ArchiveStorage } from '../../archive/storage';
import { ReplayOptionsSchema, type ReplayOptionsInput } from './options';

export interface ReplayDeps {
  storage: ArchiveStorage;
  kafka: Kafka;
  logger?: Logger;
  /**
   * With schemas.registry set (schemas/schema-ids.ts streamSchemaIdsFor): Avro records go out in the Confluent wire
   * format with the ids of the target topic's subjects, as the producer writes them, so a registry deserializer
   * reads replayed records as it reads the stream.
   */
  schemaIds?: StreamSchemaIds;
}

export interface ReplayResult {
  /** REMOVE records published (each acknowledged by all in-sync replicas). */
  published: number;
  /** Archived REMOVE records of the window left out because a retraction says the deletion never happened. */
  skippedRetracted: number;
}

export type ReplayProgress = (done: number, total: number) => void;

/** What a replay would publish (`replay --dry-run`): the rows chosen, in the order they would go out. */
export interface ReplayPlan {
  rows: CatalogRow[];
  /** Archived REMOVE records of the window left out because a retraction says the deletion never happened. */
  skippedRetracted: number;
}

/**
 * The records a replay of the window would publish, in order, read from the key indexes alone: nothing is published,
 * nothing registered. The target topic must exist, as for the replay itself.
 */
export async function planReplay(
  deps: Pick<ReplayDeps, 'storage' | 'kafka'>,
  input: ReplayOptionsInput,
): Promise<ReplayPlan> {
  const options = parseOptions(ReplayOptionsSchema, input, 'replay');
  await assertTopicExists(deps.kafka, options.topic);
  return chooseRows(deps.storage, options.table, options.fromMs, options.toMs);
}

/**
 * Re-publish the archived REMOVE records of a table and deletion-time window to the caller's topic:
 * original eventIDs (consumers de-duplicate), the stream's own encoders and message key, in order
 * per item key (deletion time, then SequenceNumber), retracted deletions left out. Every message
 * carries `ttlstream-replay: 1`, which the archiver skips, so a replay into a stream topic is
 * never archived twice. Records are written as the producer writes them: with a schema registry, in the Confluent wire
 * format (decision 0025). The Kafka timestamp is the publish time: an old timestamp would make the
 * broker's time-based retention drop the replayed messages at once.
 */
export async function replay(
  deps: ReplayDeps,
  input: ReplayOptionsInput & { onProgress?: ReplayProgress },
): Promise<ReplayResult> {
  const { onProgress, ...rest } = input;
  const options = parseOptions(ReplayOptionsSchema, rest, 'replay');
  const logger = (deps.logger ?? silentLogger).child({
    component: 'replay',
    table: options.table,
    topic: options.topic,
  });

  await assertTopicExists(deps.kafka, options.topic);
  // Registered (or looked up) under the target topic's subjects before anything is sent: a registry that cannot be
  // reached stops the replay with the setting named, having published nothing.
  await deps.schemaIds?.ensure([options.topic]);
  const { rows, skippedRetracted } = await chooseRows(
    deps.storage,
    options.table,
    options.fromMs,
    options.toMs,
  );
  const total = rows.length;
  onProgress?.(0, total);
  logger.info({ records: total, skippedRetracted }, 'replay: records chosen');

  const producer = deps.kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
  });
  await producer.connect();
  let published = 0;
  try {
    // Rows are in deletion order and a file holds one deletion hour, so an hour at a time bounds
    // memory to the records of one hour while keeping the global order.
    for (const hour of byHour(rows)) {
      const records = await readHour(deps.storage, hour);
      for (let i = 0; i < hour.length; i += options.batchSize) {
        const batch = hour
          .slice(i, i + options.batchSize)
          .map((row) => toMessage(records, row, options, deps.schemaIds));
        await send(producer, options.topic, batch);
        published += batch.length;
        onProgress?.(published, total);
      }
    }
  } catch (err) {
    logger.error({ err, published, total }, 'replay: stopped');
    if (err instanceof ValidationError)
      throw new ValidationError(`replay stopped after ${published} of ${total} records: ${err.message}`, {
        cause: err,
      });
    throw err;
  } finally {
    await producer.disconnect();
  }
  logger.info({ published, skippedRetracted }, 'replay: done');
  return { published, skippedRetracted };
}

async function assertTopicExists(kafka: Kafka, topic: string): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const topics = await admin.listTopics();
    if (!topics.includes(topic))
      throw new NotFoundError(`topic ${topic} does not exist (replay does not create topics)`);
  } finally {
    await admin.disconnect();
  }
}

/** The window's REMOVE rows, each eventID once, in deletion order; retractions looked for to the end of the archive. */
async function chooseRows(
  storage: ArchiveStorage,
  table: string,
  fromMs: number,
  toMs: number,
): Promise<{ rows: CatalogRow[]; skippedRetracted: number }> {
  const removes = new Map<string, CatalogRow>();
  const retracted = new Set<string>();
  for await (const row of openCatalog(storage).scan(table, { fromMs })) {
    if (row.kind === 'retract') retracted.add(row.retractsEventID ?? row.eventID);
    else if (inRange(row.deletedAtMs, { fromMs, toMs }) && !removes.has(row.eventID))
      removes.set(row.eventID, row);
  }
  const rows = [...removes.values()].filter((r) => !retracted.has(r.eventID)).sort(compareVersions);
  return { rows, skippedRetracted: removes.size - rows.length };
}

function* byHour(rows: CatalogRow[]): Iterable<CatalogRow[]> {
  let current: CatalogRow[] = [];
  let hour = -1;
  for (const row of rows) {
    const h = Math.floor(row.deletedAtMs / HOUR_MS);
    if (h !== hour && current.length > 0) {
      yield current;
      current = [];
    }
    hour = h;
    current.push(row);
  }
  if (current.length > 0) yield current;
}

async function readHour(storage: ArchiveStorage, rows: CatalogRow[]): Promise<Map<string, ArchivedRecord>> {
  const byFile = new Map<string, string[]>();
  for (const row of rows) byFile.set(row.file, [...(byFile.get(row.file) ?? []), row.eventID]);
  const out = new Map<string, ArchivedRecord>();
  for (const [file, ids] of byFile)
    for (const [id, rec] of await readRemoves(storage, file, ids)) out.set(id, rec);
  return out;
}

function toMessage(
  records: Map<string, ArchivedRecord>,
  row: CatalogRow,
  options: { table: string; topic: string; encoding: 'avro' | 'json' },
  schemaIds: StreamSchemaIds | undefined,
): Message {
  const record = records.get(row.eventID)?.record;
  if (!record)
    throw new ValidationError(`record ${row.eventID} is in the key index of ${row.file} but not in the file`);
  const encoded = encodeRemove(record, options.encoding);
  const { value, headers } = schemaIds ? schemaIds.onTheWire(options.topic, 'remove', encoded) : encoded;
  return {
    key: messageKey(options.table, record.dynamodb.Keys),
    value,
    headers: { ...headers, [REPLAY_HEADER]: '1' },
  };
}

async function send(producer: Producer, topic: string, messages: Message[]): Promise<void> {
  await producer.send({ topic, acks: -1, messages });
}
