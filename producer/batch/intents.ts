import { crashPoint } from '../../core/crash-points';
import { InternalError } from '../../core/errors';
import { metrics } from '../../core/metrics';
import type { Item } from '../../policy/types';
import { eventIdFor, type DecisionBasis } from '../../pipeline/image';
import type { Intent } from '../journal';
import type { Prepared, Publisher } from '../publisher';
import type { ReconcileDecision } from '../reconcile';
import { removeFor } from './publish';
import { deleting, journaledIntents, reportOnce, type BatchRun, type Entry } from './state';

/** The deletions step 3 journaled, and the REMOVE records prepared for those not yet published. */
export interface Intents {
  toDelete: Entry[];
  prepared: Map<Entry, Prepared>;
}

/**
 * What makes a new deletion decision distinct from every other about the same item (image.ts DecisionBasis): the
 * deletion the journal knows of for the item (retracted, or witnessed before the key was written again), else the
 * mark it was read from; of several marks of the item, the same one for every producer that reads them. Also the
 * mark row the decision's chain started on (Intent.markRow), which a recovery finishes with it.
 */
function basisOf(e: Entry): { basis: DecisionBasis; markRow?: string } {
  if (e.intent) {
    return {
      basis: { kind: 'after', eventID: e.intent.eventID },
      ...(e.intent.markRow !== undefined ? { markRow: e.intent.markRow } : {}),
    };
  }
  const first = e.marks
    .map((m) => ({ id: m.row ?? `${m.address.sk}@${m.markedAtMs}`, row: m.row ?? m.address.sk }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))[0];
  if (!first) throw new InternalError(`deletion of ${e.address.sk} decided without a mark or an intent`);
  return { basis: { kind: 'mark', row: first.id }, markRow: first.row };
}

/** The intent of the entry's deletion: a new one (with its eventID) for a new deletion; resumed ones keep theirs. */
function intentOf(run: BatchRun, e: Entry, image: Item, now: number): Intent {
  const d = e.decision as ReconcileDecision;
  const decided = d.next === 'delete' ? basisOf(e) : undefined;
  return decided
    ? {
        address: e.address,
        ...(decided.markRow !== undefined ? { markRow: decided.markRow } : {}),
        eventID: eventIdFor(e.address.table, e.address.keys, image, decided.basis, e.itemCanonical),
        imageHash: e.itemHash as string,
        sequenceNumber: run.ctx.sequences.next(now),
        decidedAtMs: now,
        state: 'INTENT',
      }
    : (e.intent as Intent);
}

/**
 * Encode (and validate against the contract) before anything durable happens: an item whose record cannot be
 * published is not deleted, and does not hold up the rest of the shard. False when it cannot be.
 */
function prepare(run: BatchRun, e: Entry, prepared: Map<Entry, Prepared>): boolean {
  const { ctx } = run;
  try {
    prepared.set(e, (ctx.publisher as Publisher).prepare(removeFor(ctx, e)));
    return true;
  } catch (err) {
    const once = `unpublishable|${e.address.sk}|${e.itemHash as string}`;
    if (reportOnce(ctx, once)) {
      ctx.logger.error(
        { table: e.address.table, keys: e.address.keys, err },
        'expired item not deleted: its REMOVE record cannot be encoded',
      );
    }
    metrics.deletesSkipped.inc({ table: e.address.table, reason: 'unpublishable' });
    e.deletion = undefined;
    run.stats.left++;
    return false;
  }
}

/** Step 3: intents for new deletions, journaled in one write; resumed ones keep theirs. */
export async function journalIntents(run: BatchRun, work: Entry[], now: number): Promise<Intents> {
  const toDelete: Entry[] = [];
  const prepared = new Map<Entry, Prepared>();
  for (const e of work.filter(deleting)) {
    const d = e.decision as ReconcileDecision;
    const image = e.item as Item;
    const intent = intentOf(run, e, image, now);
    e.deletion = { ...intent, image };
    if (d.next !== 'resume-delete' && !prepare(run, e, prepared)) continue;
    e.journal = intent;
    e.tombstone = false; // a new deletion of the item replaces the retracted one in this batch's journal
    run.journaled.add(e);
    toDelete.push(e);
  }
  if (toDelete.some((e) => (e.decision as ReconcileDecision).next === 'delete')) {
    run.lease.assertValid();
    await run.journal.write(journaledIntents(run));
    run.stats.acted += toDelete.length;
    crashPoint('producer.after-intent');
  }
  return { toDelete, prepared };
}
