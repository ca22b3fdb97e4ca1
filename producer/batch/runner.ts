import { InternalError } from '../../core/errors';
import type { LeaseHandle } from '../../core/leases';
import { BatchJournal, deleteRows, newBatchId } from '../journal';
import { cleanUp } from './cleanup';
import { publishLate, publishRecoveredCorrections, retractEarly } from './corrections';
import { decide, dropSettled, group, readItems, reportDryRun } from './decide';
import { deleteAll, witness } from './delete';
import { applyRateGuard, liveEntries } from './guard-verdicts';
import { journalIntents } from './intents';
import { publishRemoves } from './publish';
import type { BatchContext, BatchInput, BatchRun, BatchStats, PublishingRun } from './state';

export type { BatchContext, BatchInput, BatchStats } from './state';

/**
 * One batch of one leased shard: steps 1–7 of the deletion protocol (docs/decisions/0001-deletion-protocol.md),
 * each a named step of this folder run in order. Every state change is one journal write for the whole batch
 * (../journal.ts); the conditional DeleteItem itself (and the rare GetItem after a failed condition) is the only
 * per-item request besides the batched reads.
 */
export async function processBatch(
  ctx: BatchContext,
  input: BatchInput,
  lease: LeaseHandle,
): Promise<BatchStats> {
  const stats: BatchStats = { acted: 0, deleted: 0, retracted: 0, left: 0, pending: [] };
  const entries = group(input);
  if (entries.length === 0) {
    // Only rows of a first journal version cut short by a crash: nothing of that batch was published.
    await deleteRows(ctx.ddb, ctx.options.marksTable, input.recovered?.rowKeys ?? []);
    return stats;
  }
  const journal = new BatchJournal(ctx.ddb, ctx.options.marksTable, input.shard, newBatchId(ctx.now()));
  const run: BatchRun = { ctx, input, lease, stats, entries, journal, journaled: new Set() };
  if (ctx.options.dryRun) await dryRun(run);
  else if (!ctx.publisher) throw new InternalError('a producer that is not a dry run has no publisher');
  else await deleteExpired({ ...run, publisher: ctx.publisher });
  return stats;
}

/** Steps 1 and 2, then only the log of what would be deleted. */
async function dryRun(run: BatchRun): Promise<void> {
  const { live } = await liveEntries(run);
  await readItems(run.ctx, live); // step 1
  reportDryRun(run, decide(live, run.ctx.now())); // step 2
}

async function deleteExpired(run: PublishingRun): Promise<void> {
  await publishRecoveredCorrections(run);
  const { live, guards } = await liveEntries(run);
  await readItems(run.ctx, live); // step 1
  const now = run.ctx.now();
  const decided = decide(live, now); // step 2
  const work = await applyRateGuard(run, decided, guards);
  await retractEarly(run, work, now);
  dropSettled(work);
  const { toDelete, prepared } = await journalIntents(run, work, now); // step 3
  await publishRemoves(run, toDelete, prepared, now); // steps 4 and 5
  const deletes = await deleteAll(run, toDelete, now); // step 6
  await witness(run, deletes); // step 6b
  await publishLate(run, deletes.late);
  await cleanUp(run); // step 7
}
