import type { IntentState } from './journal';

/**
 * Step 2 of the deletion protocol as a pure decision table (docs/decisions/0001-deletion-protocol.md): what to do
 * with one marked item given its intent row (if any) and the item as read now.
 */

export interface ReconcileInput {
  /** The table is ENABLED and its guard allows deleting. */
  active: boolean;
  intent?: { state: IntentState; imageHash: string };
  /** The item as read now (consistent read); undefined when absent. */
  item?: { imageHash: string; expired: boolean };
}

export type Next =
  /** Touch nothing: the table is not ENABLED or is paused by the guard. */
  | 'leave'
  /** Remove the mark (and intent) rows; nothing to publish or delete. */
  | 'drop'
  /** Same deletion as the intent: publish its REMOVE again (same eventID), then delete. */
  | 'resume-publish'
  /** Same deletion as the intent, already published: delete. */
  | 'resume-delete'
  /** A new deletion: new intent, publish, delete. */
  | 'delete';

export interface ReconcileDecision {
  /** Publish RETRACT(intent.eventID) first: the intent's REMOVE may be on Kafka but will not be effective. */
  retract: boolean;
  next: Next;
  /** Why, for logs and the skipped-deletes metric. */
  reason: string;
}

export function reconcile(input: ReconcileInput): ReconcileDecision {
  const { active, intent, item } = input;
  if (!active) return { retract: false, next: 'leave', reason: 'table-inactive' };
  if (intent?.state === 'RETRACTED') {
    // Retracted, perhaps by a batch that crashed before its RETRACT was acknowledged: publish it again (a duplicate
    // is harmless) and never resume that deletion. A present item is judged afresh, as a new decision.
    if (!item) return { retract: true, next: 'drop', reason: 'retracted' };
    return { retract: true, next: item.expired ? 'delete' : 'drop', reason: 'retracted' };
  }
  if (intent?.state === 'DELETED') {
    // The delete is known to have happened: its REMOVE stands. A present item is a new incarnation of the key
    // (written after the deletion), judged afresh like any unmarked item.
    if (!item) return { retract: false, next: 'drop', reason: 'already-deleted' };
    return { retract: false, next: item.expired ? 'delete' : 'drop', reason: 'recreated-after-delete' };
  }
  if (intent) {
    if (item) {
      if (item.imageHash === intent.imageHash) {
        if (item.expired) {
          return {
            retract: false,
            next: intent.state === 'PUBLISHED' ? 'resume-delete' : 'resume-publish',
            reason: 'intent-resumed',
          };
        }
        // Same image, no longer expired: the settings changed since the intent (e.g. a longer mongo expiry).
        return { retract: true, next: 'drop', reason: 'not-expired-anymore' };
      }
      // Changed since the intent: that deletion will not happen; the current image is judged afresh.
      return { retract: true, next: item.expired ? 'delete' : 'drop', reason: 'item-changed' };
    }
    if (intent.state === 'PUBLISHED') return { retract: false, next: 'drop', reason: 'already-deleted' };
    // Absent with an INTENT only: the REMOVE may or may not be on Kafka, and we did not delete the item.
    return { retract: true, next: 'drop', reason: 'item-missing' };
  }
  if (!item) return { retract: false, next: 'drop', reason: 'item-missing' };
  if (!item.expired) return { retract: false, next: 'drop', reason: 'not-expired' };
  return { retract: false, next: 'delete', reason: 'expired' };
}
