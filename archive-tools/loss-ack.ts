import {
  LossLedger,
  partitionKey,
  unacknowledged,
  unacknowledgedStreamLosses,
  type Loss,
  type StreamLoss,
} from '../archive/ledgers/loss';
import {
  encodeArchiveJson,
  lossAckPath,
  streamLossAckPath,
  type LossAck,
  type StreamLossAck,
} from '../archive/storage/layout';
import type { ArchiveStorage } from '../archive/storage/types';

export interface AckLossInput {
  topic: string;
  /** Only this partition; every partition of the topic with an unacknowledged loss when absent. */
  partition?: number;
  /** Who acknowledges (the CLI's `cli:<user>`), kept in the record. */
  actor: string;
  /** Why, or where it is handled (a ticket): kept in the record. */
  note?: string;
  /** Say what would be acknowledged; write nothing. */
  dryRun: boolean;
  now?: () => number;
}

export interface AckLossResult {
  dryRun: boolean;
  /** One acknowledgement per partition, with the path it is (or would be) written at. */
  acks: Array<{ path: string; ack: LossAck }>;
}

/**
 * `ttlstream archive ack-loss`: an operator says the losses of a topic's partitions are known and handled. Each
 * partition's acknowledgement is a record in the archive (`_loss-ack/`), next to the loss records it covers: every
 * archiver reads it (archiver/loss.ts) and TtlstreamArchiveLoss clears for that partition on all of them; it names who
 * and when, and which losses, for the audit trail. It covers the losses recorded now, up to the highest lost offset of
 * the partition: a loss detected afterwards ends beyond it and fires again.
 */
export async function acknowledgeLoss(storage: ArchiveStorage, input: AckLossInput): Promise<AckLossResult> {
  const { losses, acks } = await new LossLedger(storage).read();
  const pending = unacknowledged(losses, acks).filter(
    (l) => l.topic === input.topic && (input.partition === undefined || l.partition === input.partition),
  );
  const byPartition = new Map<string, Loss[]>();
  for (const l of pending) {
    const key = partitionKey(l.topic, l.partition);
    byPartition.set(key, [...(byPartition.get(key) ?? []), l]);
  }
  const ackedAtMs = (input.now ?? Date.now)();
  const out: AckLossResult = { dryRun: input.dryRun, acks: [] };
  for (const list of byPartition.values()) {
    const sorted = [...list].sort((a, b) => (a.from < b.from ? -1 : a.from > b.from ? 1 : 0));
    const through = sorted.reduce((max, l) => (l.to > max ? l.to : max), -1n);
    const first = sorted[0] as Loss;
    const ack: LossAck = {
      topic: first.topic,
      partition: first.partition,
      through: through.toString(),
      losses: sorted.map((l) => ({
        path: l.path,
        from: l.from.toString(),
        to: l.to.toString(),
        records: l.records.toString(),
      })),
      ackedAtMs,
      ackedBy: input.actor,
      ...(input.note !== undefined ? { note: input.note } : {}),
    };
    const path = lossAckPath(ack.topic, ack.partition, through);
    if (!input.dryRun) await storage.put(path, encodeArchiveJson(ack));
    out.acks.push({ path, ack });
  }
  out.acks.sort((a, b) => a.ack.partition - b.ack.partition);
  return out;
}

export interface AckStreamLossInput {
  table: string;
  actor: string;
  note?: string;
  dryRun: boolean;
  now?: () => number;
}

export interface AckStreamLossResult {
  dryRun: boolean;
  /** The acknowledgement written (or that would be), with the losses it covers; undefined when none is pending. */
  ack?: { path: string; ack: StreamLossAck; losses: StreamLoss[] };
}

/**
 * `ttlstream archive ack-loss --table`: an operator says the losses of a table's followed DynamoDB streams are known
 * and handled. One record under `_stream-loss-ack/` covers every stream loss of the table detected so far; the
 * streams role then clears `ttlstream_streams_loss` (TtlstreamArchiveLoss) for it. A loss detected later fires again.
 */
export async function acknowledgeStreamLoss(
  storage: ArchiveStorage,
  input: AckStreamLossInput,
): Promise<AckStreamLossResult> {
  const { losses, acks } = await new LossLedger(storage).readStreams();
  const pending = unacknowledgedStreamLosses(losses, acks).filter((l) => l.table === input.table);
  if (pending.length === 0) return { dryRun: input.dryRun };
  const throughMs = Math.max(...pending.map((l) => l.detectedAtMs));
  const ack: StreamLossAck = {
    table: input.table,
    throughMs,
    losses: pending.map((l) => l.path).sort(),
    ackedAtMs: (input.now ?? Date.now)(),
    ackedBy: input.actor,
    ...(input.note !== undefined ? { note: input.note } : {}),
  };
  const path = streamLossAckPath(input.table, throughMs);
  if (!input.dryRun) await storage.put(path, encodeArchiveJson(ack));
  return { dryRun: input.dryRun, ack: { path, ack, losses: pending } };
}
