/**
 * Example: react to TTL deletions from ttlstream, as a Lambda function would react to a DynamoDB
 * stream. Copy this file into your service and replace the bodies of the three handlers.
 *
 *   TTL_BROKERS=127.0.0.1:19092 TTL_TOPICS=ttlstream.remove TTL_GROUP=billing-ttl \
 *     npx tsx examples/consume-ttl-stream.ts
 *
 * Rules the handlers below follow (see docs/stream-contract.md):
 * - a record may arrive more than once: key every effect by `record.eventID`;
 * - a RETRACT takes back the REMOVE with that eventID: undo the effect if you made one;
 * - throwing from a handler makes Kafka redeliver the message; nothing is committed before a handler resolves.
 */
import { consumeTtlStream, isTtlDelete, type Retraction, type StreamRecord } from '../consumer';
import { createLogger } from '../core/logger';

const logger = createLogger({ name: 'ttl-consumer-example' });

/** Stand-in for your own store. A real one is a table keyed by eventID, written in the same transaction as the effect. */
const archivedInvoices = new Map<string, { table: string; key: string; deletedAt: Date }>();

async function onRecord(
  record: StreamRecord,
  meta: { table: string; partition: number; offset: string },
): Promise<void> {
  if (!isTtlDelete(record)) return; // the helper validates this already; shown because Lambda code does it
  if (archivedInvoices.has(record.eventID)) return; // already handled: idempotent by eventID
  const image = record.dynamodb.OldImage; // the whole item as it was when it expired (SDK shape)
  archivedInvoices.set(record.eventID, {
    table: meta.table,
    key: JSON.stringify(record.dynamodb.Keys),
    deletedAt: new Date(record.dynamodb.ApproximateCreationDateTime * 1000),
  });
  logger.info(
    { eventID: record.eventID, table: meta.table, attributes: Object.keys(image).length },
    'item expired',
  );
}

async function onRetraction(retraction: Retraction): Promise<void> {
  // The deleter announced this deletion but the item was not deleted (it changed in between).
  if (archivedInvoices.delete(retraction.retractsEventID)) {
    logger.warn(
      { eventID: retraction.retractsEventID, reason: retraction.reason },
      'deletion retracted; effect undone',
    );
  }
}

async function main(): Promise<void> {
  const consumer = await consumeTtlStream({
    brokers: (process.env.TTL_BROKERS ?? '127.0.0.1:19092').split(','),
    groupId: process.env.TTL_GROUP ?? 'ttl-consumer-example',
    topics: (process.env.TTL_TOPICS ?? 'ttlstream.remove').split(','),
    fromBeginning: true,
    logger,
    onRecord,
    onRetraction,
    onPoison: (err, meta) => {
      // Not a valid record. The archiver already copies these to the dead-letter topic; log and move on.
      logger.error(
        { reason: err.reason, topic: meta.topic, partition: meta.partition, offset: meta.offset },
        err.message,
      );
    },
  });
  // The process ends by itself once the consumer has stopped: nothing is cut short, logs included.
  const shutdown = (): void => void consumer.stop();
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    logger.fatal({ err }, 'consumer failed');
    process.exitCode = 1;
  });
}
