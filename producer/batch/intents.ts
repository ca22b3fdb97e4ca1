import { crashPoint } from '../../core/crash-points';
import { InternalError } from '../../core/errors';
import { metrics } from '../../core/metrics';
import { eventIdFor, type DecisionBasis } from '../../pipeline/image';
import type { Intent } from '../journal';
import type { Prepared } from '../../pipeline/publisher';
import { removeFor } from './publish';
import {
  deleting,
  journaledIntents,
  reportOnce,
  type BatchRun,
  type DecidedEntry,
  type DeletingEntry,
  type Deletion,
  type Entry,
  type PublishingRun,
  type ReadItem,
} from './state';

/** The deletions step 3 journaled, and the REMOVE records prepared for those not yet published. */
export interface Intents {
  toDelete: DeletingEntry[];
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
function intentOf(run: BatchRun, e: DecidedEntry & { read: ReadItem }, now: number): Intent {
  if (e.decision.next !== 'delete') {
    // resume-publish or resume-delete: reconcile resumes a journaled intent only.
    if (!e.intent) throw new InternalError(`deletion of ${e.address.sk} resumed without an intent`);
    return e.intent;
  }
  const decided = basisOf(e);
  return {
    address: e.address,
    ...(decided.markRow !== undefined ? { markRow: decided.markRow } : {}),
    eventID: eventIdFor(e.address.table, e.address.keys, e.read.item, decided.basis, e.read.canonical),
    imageHash: e.read.hash,
    sequenceNumber: run.ctx.sequences.next(now),
    decidedAtMs: now,
    state: 'INTENT',
  };
}

/**
 * Encode (and validate against the contract) before anything durable happens: an item whose record cannot be
 * published is not deleted, and does not hold up the rest of the shard. False when it cannot be.
 */
function prepare(
  run: PublishingRun,
  e: DecidedEntry & { read: ReadItem },
  deletion: Deletion,
  prepared: Map<Entry, Prepared>,
): boolean {
  const { ctx } = run;
  try {
    prepared.set(e, run.publisher.prepare(removeFor(ctx, e.address, deletion, e.read)));
    return true;
  } catch (err) {
    const once = `unpublishable|${e.address.sk}|${e.read.hash}`;
    if (reportOnce(ctx, once)) {
      ctx.logger.error(
        { table: e.address.table, keys: e.address.keys, err },
        'expired item not deleted: its REMOVE record cannot be encoded',
      );
    }
    metrics.deletesSkipped.inc({ table: e.address.table, reason: 'unpublishable' });
    run.stats.left++;
    return false;
  }
}

/** Step 3: intents for new deletions, journaled in one write; resumed ones keep theirs. */
export async function journalIntents(
  run: PublishingRun,
  work: DecidedEntry[],
  now: number,
): Promise<Intents> {
  const toDelete: DeletingEntry[] = [];
  const prepared = new Map<Entry, Prepared>();
  for (const e of work.filter(deleting)) {
    const intent = intentOf(run, e, now);
    const deletion: Deletion = { ...intent, image: e.read.item };
    if (e.decision.next !== 'resume-delete' && !prepare(run, e, deletion, prepared)) continue;
    // A new deletion of the item replaces the retracted one in this batch's journal.
    const entry = Object.assign(e, { deletion, journal: intent, tombstone: false });
    run.journaled.add(entry);
    toDelete.push(entry);
  }
  if (toDelete.some((e) => e.decision.next === 'delete')) {
    run.lease.assertValid();
    await run.journal.write(journaledIntents(run));
    run.stats.acted += toDelete.length;
    crashPoint('producer.after-intent');
  }
  return { toDelete, prepared };
}
