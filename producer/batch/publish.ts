import { crashPoint } from '../../core/crash-points';
import { metrics, tableLabel } from '../../core/metrics';
import { evaluate } from '../../policy';
import type { TableTtlSettings } from '../../policy/settings';
import type { Item } from '../../policy/types';
import { sizeBytes } from '../../pipeline/image';
import type { Intent } from '../journal';
import { buildRemoveRecord, type Outgoing, type Prepared, type Publisher } from '../publisher';
import { pick } from '../../pipeline/image';
import { journaledIntents, keyNames, type BatchContext, type BatchRun, type Entry } from './state';

/** The REMOVE record of the entry's deletion. */
export function removeFor(ctx: BatchContext, e: Entry): Outgoing {
  const d = e.deletion as Intent & { image: Item };
  const keys = pick(d.image, keyNames(e.address.keys));
  const record = buildRemoveRecord(ctx.options.stream, {
    table: e.address.table,
    keys,
    image: d.image,
    eventID: d.eventID,
    sequenceNumber: d.sequenceNumber,
    decidedAtMs: d.decidedAtMs,
    sizeBytes: sizeBytes(keys, d.image, d.image === e.item ? e.itemCanonical : undefined),
  });
  return { kind: 'remove', table: e.address.table, record };
}

function expiryOf(e: Entry, now: number): number | undefined {
  const v = evaluate(e.settings as TableTtlSettings, e.item as Item, now);
  return v.kind === 'expires' ? v.expiresAtMs : undefined;
}

/** How long after its expiry each item's record went out, per table (the deletion lag). */
function observeLag(ctx: BatchContext, published: Entry[], now: number): void {
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
  run: BatchRun,
  toDelete: Entry[],
  prepared: Map<Entry, Prepared>,
  now: number,
): Promise<void> {
  const { ctx, lease, stats, journal } = run;
  const toPublish = toDelete.filter((e) => prepared.has(e));
  if (toPublish.length > 0) {
    lease.assertValid();
    await (ctx.publisher as Publisher).publish(toPublish.map((e) => prepared.get(e) as Prepared));
    observeLag(ctx, toPublish, now);
    stats.acted += toPublish.length;
    crashPoint('producer.after-publish');

    // Step 5.
    for (const e of toPublish) e.journal = { ...(e.journal as Intent), state: 'PUBLISHED' };
    await journal.write(journaledIntents(run));
    crashPoint('producer.after-published-state');
  }
}
