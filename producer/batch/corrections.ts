import { crashPoint } from '../../core/crash-points';
import type { Retraction } from '../../schemas';
import type { Correction, Intent } from '../journal';
import type { Outgoing } from '../../pipeline/publisher';
import { removeFor } from './publish';
import {
  journaledIntents,
  tombstone,
  type BatchContext,
  type DecidedEntry,
  type Deletion,
  type Entry,
  type PublishingRun,
} from './state';

export function retraction(entry: Entry, eventID: string, reason: string, now: number): Outgoing {
  const r: Retraction = {
    eventName: 'RETRACT',
    retractsEventID: eventID,
    table: entry.address.table,
    Keys: entry.address.keys,
    reason,
    retractedAt: now,
  };
  return { kind: 'retract', table: entry.address.table, retraction: r };
}

/** RETRACT the published deletion and publish the image actually deleted under its own eventID. */
export function correctionOf(ctx: BatchContext, e: Entry, intent: Intent, c: Correction): Outgoing[] {
  const corrected: Deletion = {
    ...intent,
    eventID: c.eventID,
    imageHash: c.imageHash,
    sequenceNumber: c.sequenceNumber,
    image: c.image,
  };
  return [retraction(e, intent.eventID, 'item-changed', ctx.now()), removeFor(ctx, e.address, corrected)];
}

/**
 * A correction witnessed before a crash goes out first, whatever the table's state now: the deletion happened,
 * and its effective record must carry the image actually deleted.
 */
export async function publishRecoveredCorrections(run: PublishingRun): Promise<void> {
  const { ctx, lease, stats } = run;
  const corrections: Outgoing[] = [];
  for (const e of run.entries) {
    if (!e.intent?.correction) continue;
    const { correction, ...settled } = e.intent;
    corrections.push(...correctionOf(ctx, e, e.intent, correction));
    e.intent = settled;
    e.journal = settled;
  }
  if (corrections.length > 0) {
    lease.assertValid();
    await run.publisher.publish(corrections);
    stats.retracted += corrections.length / 2;
    stats.acted += corrections.length;
  }
}

/**
 * Step 2's retractions go out before the journal records a new deletion of the same item, and each is journaled
 * RETRACTED before it goes out: a crash after the RETRACT must not let a recovery resume the deletion and publish
 * its eventID again (REMOVE, RETRACT, REMOVE under one eventID reads as retracted to every consumer). A deletion
 * an earlier batch journaled RETRACTED is retracted again: that batch may have died before the acknowledgement.
 */
export async function retractEarly(run: PublishingRun, work: DecidedEntry[], now: number): Promise<void> {
  const { lease, stats, journal } = run;
  const early: Outgoing[] = [];
  for (const e of work) {
    if (!e.decision?.retract || !e.intent) continue;
    const reason =
      e.intent.state === 'RETRACTED' ? (e.intent.retractReason ?? e.decision.reason) : e.decision.reason;
    if (e.intent.state !== 'RETRACTED') tombstone(run, e, e.intent, reason);
    early.push(retraction(e, e.intent.eventID, reason, now));
  }
  if (early.length > 0) {
    lease.assertValid();
    if (run.journaled.size > 0) {
      await journal.write(journaledIntents(run));
      crashPoint('producer.after-retracted-state');
    }
    await run.publisher.publish(early);
    stats.retracted += early.length;
    stats.acted += early.length;
    crashPoint('producer.after-retract');
  }
}

/** Corrections and retractions from step 6, before the journal that would let us redo them disappears. */
export async function publishLate(run: PublishingRun, late: Outgoing[]): Promise<void> {
  if (late.length > 0) {
    await run.publisher.publish(late);
    run.stats.retracted += late.filter((m) => m.kind === 'retract').length;
    crashPoint('producer.after-retract');
  }
}
