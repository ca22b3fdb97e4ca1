import { LossLedger, unacknowledged, unacknowledgedStreamLosses } from '../../archive/ledgers/loss';
import type { ArchiveStorage } from '../../archive/storage';

/**
 * The archive's losses that may hold deletions of an audited window: records of the table's stream topic that left
 * Kafka unarchived, and records of the table's DynamoDB stream that left it before the streams role read them. A
 * loss cannot be placed in time more closely than when it was detected, so every loss detected from the window's
 * start on is in scope. The proof has a gap there; an unacknowledged one is an open incident.
 */
export interface AuditLoss {
  kind: 'kafka' | 'stream';
  detectedAt: string;
  acknowledged: boolean;
  /** What was lost, in words an auditor reads. */
  detail: string;
  /** The loss record in the archive. */
  record: string;
}

export async function lossesInScope(
  storage: ArchiveStorage,
  scope: { table: string; topic: string; fromMs: number },
): Promise<AuditLoss[]> {
  const ledger = new LossLedger(storage);
  const kafka = await ledger.read();
  const streams = await ledger.readStreams();
  const open = new Set(unacknowledged(kafka.losses, kafka.acks).map((l) => l.path));
  const openStream = new Set(unacknowledgedStreamLosses(streams.losses, streams.acks).map((l) => l.path));
  const out: AuditLoss[] = [];
  for (const l of kafka.losses) {
    if (l.topic !== scope.topic || (l.detectedAtMs ?? 0) < scope.fromMs) continue;
    out.push({
      kind: 'kafka',
      detectedAt: new Date(l.detectedAtMs ?? 0).toISOString(),
      acknowledged: !open.has(l.path),
      detail: `${l.topic} partition ${l.partition}, offsets ${l.from}-${l.to} (${l.records} records): aged out of Kafka unarchived`,
      record: l.path,
    });
  }
  for (const l of streams.losses) {
    if (l.table !== scope.table || l.detectedAtMs < scope.fromMs) continue;
    out.push({
      kind: 'stream',
      detectedAt: new Date(l.detectedAtMs).toISOString(),
      acknowledged: !openStream.has(l.path),
      detail: `DynamoDB stream shard ${l.shardId}, after ${l.after ?? 'its start'}: left the stream unread (${l.reason})`,
      record: l.path,
    });
  }
  return out.sort((a, b) => (a.detectedAt < b.detectedAt ? -1 : a.detectedAt > b.detectedAt ? 1 : 0));
}
