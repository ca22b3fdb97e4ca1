import { ConditionalCheckFailedException, DeleteItemCommand, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { crashPoint } from '../../core/crash-points';
import { metrics } from '../../core/metrics';
import { withRetry } from '../../core/retry';
import { stillExpiredCondition } from '../../policy';
import { dynamoRetry } from '../../pipeline/ddb-batch';
import { canonicalItem, eventIdFor, hashOfCanonical } from '../../pipeline/image';
import type { Outgoing } from '../../pipeline/publisher';
import { correctionOf, retraction } from './corrections';
import { journaledIntents, tombstone, type BatchContext, type BatchRun, type DeletingEntry } from './state';

type DeleteOutcome = 'deleted' | 'kept-by-condition' | 'deleted-by-peer' | 'failed';

/** What step 6 did: the items deleted, how many the condition kept, and the records to publish after the witness. */
export interface Deletes {
  deleted: DeletingEntry[];
  kept: number;
  late: Outgoing[];
}

/**
 * Step 6 for one item. On success the entry is done; when the server's old image differs from the published one
 * (an attribute the condition cannot pin changed in the window), the REMOVE is corrected: RETRACT it and publish
 * the image actually deleted under its own eventID.
 */
async function deleteOne(
  ctx: BatchContext,
  e: DeletingEntry,
  now: number,
  late: Outgoing[],
): Promise<DeleteOutcome> {
  const d = e.deletion;
  const table = e.address.table;
  const cond = stillExpiredCondition(e.settings, d.image, now);
  try {
    const out = await withRetry(
      () =>
        ctx.ddb.send(
          new DeleteItemCommand({
            TableName: table,
            Key: e.address.keys,
            ConditionExpression: cond.expression,
            ExpressionAttributeNames: cond.names,
            ...(Object.keys(cond.values).length > 0 ? { ExpressionAttributeValues: cond.values } : {}),
            ReturnValues: 'ALL_OLD',
          }),
        ),
      dynamoRetry,
    );
    e.done = true;
    metrics.deletions.inc({ table });
    const old = out.Attributes;
    const oldCanonical = old ? canonicalItem(old) : undefined;
    // The published image's canonical form when this batch read it, else (a resumed intent) only its hash.
    const changed =
      oldCanonical !== undefined &&
      (d.image === e.read.item
        ? oldCanonical !== e.read.canonical
        : hashOfCanonical(oldCanonical) !== d.imageHash);
    if (old && oldCanonical !== undefined && changed) {
      // Witnessed with the deletion (step 6b) before it is published, so a crash in between cannot lose it.
      e.correction = {
        eventID: eventIdFor(
          table,
          e.address.keys,
          old,
          { kind: 'corrects', eventID: d.eventID },
          oldCanonical,
        ),
        imageHash: hashOfCanonical(oldCanonical),
        sequenceNumber: ctx.sequences.next(ctx.now()),
        image: old,
      };
      late.push(...correctionOf(ctx, e, d, e.correction));
      ctx.logger.warn(
        { table, keys: e.address.keys },
        'deleted image differed from the published one; record corrected',
      );
    }
    return 'deleted';
  } catch (err) {
    if (!(err instanceof ConditionalCheckFailedException)) {
      // The intent stays PUBLISHED: the next batch over this shard resumes the delete.
      ctx.logger.warn({ table, keys: e.address.keys, err }, 'conditional delete failed; will be retried');
      return 'failed';
    }
  }
  const now2 = await withRetry(
    () => ctx.ddb.send(new GetItemCommand({ TableName: table, Key: e.address.keys, ConsistentRead: true })),
    dynamoRetry,
  );
  e.done = true;
  if (!now2.Item) {
    // Gone: a peer acting on the same intent deleted it under the same eventID; the record stands.
    return 'deleted-by-peer';
  }
  late.push(retraction(e, d.eventID, 'condition-failed', ctx.now()));
  metrics.deletesSkipped.inc({ table, reason: 'condition-failed' });
  return 'kept-by-condition';
}

/** Step 6: the conditional deletes, bounded process-wide. */
export async function deleteAll(run: BatchRun, toDelete: DeletingEntry[], now: number): Promise<Deletes> {
  const { ctx, lease, stats } = run;
  const late: Outgoing[] = [];
  const deleted: DeletingEntry[] = [];
  let kept = 0;
  if (toDelete.length > 0) {
    lease.assertValid();
    let remaining = toDelete.length;
    await Promise.all(
      toDelete.map((e) =>
        ctx.deletes.run(async () => {
          const outcome = await deleteOne(ctx, e, now, late);
          remaining--;
          if (outcome === 'deleted' || outcome === 'deleted-by-peer') deleted.push(e);
          if (outcome === 'kept-by-condition') {
            tombstone(run, e, e.journal, 'condition-failed');
            kept++;
          }
          if (outcome === 'deleted') {
            stats.deleted++;
            if (remaining > 0) crashPoint('producer.after-delete');
          }
        }),
      ),
    );
    stats.acted += toDelete.length;
  }
  return { deleted, kept, late };
}

/**
 * Step 6b: witness the deletes at once, corrections included, so that neither a key re-created before the
 * clean-up is mistaken for a delete that failed (which would retract a real deletion's record), nor a crash
 * before the corrections are published loses them. See 0001, "DELETED". Deletions the condition kept are
 * journaled RETRACTED in the same write, before their RETRACTs go out (see step 2).
 */
export async function witness(run: BatchRun, { deleted, kept }: Deletes): Promise<void> {
  if (deleted.length > 0 || kept > 0) {
    for (const e of deleted) {
      e.journal = {
        ...e.journal,
        state: 'DELETED',
        ...(e.correction ? { correction: e.correction } : {}),
      };
    }
    await run.journal.write(journaledIntents(run));
    crashPoint('producer.after-witness');
  }
}
