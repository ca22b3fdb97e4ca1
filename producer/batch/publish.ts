import { crashPoint } from '../../core/crash-points';
import { metrics, tableLabel } from '../../core/metrics';
import { evaluate } from '../../policy';
import { pick, sizeBytes } from '../../pipeline/image';
import type { MarkAddress } from '../../pipeline/marks';
import { buildRemoveRecord, type Outgoing, type Prepared } from '../../pipeline/publisher';
import {
  journaledIntents,
  keyNames,
  type BatchContext,
  type DeletingEntry,
  type Deletion,
  type Entry,
  type PublishingRun,
  type ReadItem,
} from './state';

/**
 * The REMOVE record of a deletion of the item at `address`; `read` is the item as this batch read it, whose
 * canonical form SizeBytes reuses when the deletion's image is that item.
 */
export function removeFor(
  ctx: BatchContext,
  address: MarkAddress,
  deletion: Deletion,
  read?: ReadItem,
): Outgoing {
  const keys = pick(deletion.image, keyNames(address.keys));
  const record = buildRemoveRecord(ctx.options.stream, {
    table: address.table,
    keys,
    image: deletion.image,
    eventID: deletion.eventID,
    sequenceNumber: deletion.sequenceNumber,
    decidedAtMs: deletion.decidedAtMs,
    sizeBytes: sizeBytes(keys, deletion.image, deletion.image === read?.item ? read.canonical : undefined),
  });
  return { kind: 'remove', table: address.table, record };
}

function expiryOf(e: DeletingEntry, now: number): number | undefined {
  const v = evaluate(e.settings, e.read.item, now);
  return v.kind === 'expires' ? v.expiresAtMs : undefined;
}

/** How long after its expiry each item's record went out, per table (the deletion lag). */
function observeLag(ctx: BatchContext, published: DeletingEntry[], now: number): void {
  const lagByTable = new Map<string, number>();
  for (const e of published) {
    const expiresAtMs = expiryOf(e, now);
    if (expiresAtMs !== undefined) {
      const lag = Math.max(0, ctx.now() - expiresAtMs) / 1000;
      metrics.expiryToRecordSeconds.observe({ table: e.address.table }, lag);
      lagByTable.set(e.address.table, Math.max(lag, lagByTable.get(e.address.table) ?? 0));
    }
  }
  for (const [table, lag] of lagByTable) metrics.deletionLag.set({ table: tableLabel(table) }, lag);
}

/**
 * Step 4: publish the REMOVE records of new and not-yet-published deletions (those with a prepared record);
 * step 5: journal them PUBLISHED.
 */
export async function publishRemoves(
  run: PublishingRun,
  toDelete: DeletingEntry[],
  prepared: Map<Entry, Prepared>,
  now: number,
): Promise<void> {
  const { ctx, lease, stats, journal } = run;
  const toPublish = toDelete.flatMap((e) => {
    const record = prepared.get(e);
    return record ? [{ e, record }] : [];
  });
  if (toPublish.length > 0) {
    lease.assertValid();
    await run.publisher.publish(toPublish.map((p) => p.record));
    observeLag(
      ctx,
      toPublish.map((p) => p.e),
      now,
    );
    stats.acted += toPublish.length;
    crashPoint('producer.after-publish');

    // Step 5.
    for (const { e } of toPublish) e.journal = { ...e.journal, state: 'PUBLISHED' };
    await journal.write(journaledIntents(run));
    crashPoint('producer.after-published-state');
  }
}
