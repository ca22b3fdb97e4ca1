import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { crashPoint } from '../../core/crash-points';
import { batchWriteAll } from '../../pipeline/ddb-batch';
import { deleteJournalRows } from '../journal';
import { markRows, rowKey, type Mark } from '../../pipeline/marks';
import type { BatchRun } from './state';

interface MarkRow {
  shard: number;
  table: string;
  all: number;
  unfinished: Mark[];
}

function keyId(k: Record<string, AttributeValue>): string {
  return `${k.pk?.S ?? ''}|${k.sk?.S ?? ''}`;
}

/** The batch's mark rows by sk, each with its marks not finished by this batch. */
function markRowsOf(run: BatchRun): Map<string, MarkRow> {
  const rows = new Map<string, MarkRow>();
  for (const e of run.entries) {
    for (const m of e.marks) {
      const key = m.row ?? m.address.sk;
      const r = rows.get(key) ?? { shard: m.address.shard, table: m.address.table, all: 0, unfinished: [] };
      r.all++;
      if (!e.done) r.unfinished.push(m);
      rows.set(key, r);
    }
  }
  return rows;
}

/**
 * Step 7: the mark rows (deleted when all their marks are finished, else replaced by a row of the unfinished
 * ones), then the journal: what is not finished is carried in one last version. The finished mark rows go in the
 * first request of the journal's clean-up, which deletes every latest version last.
 */
export async function cleanUp(run: BatchRun): Promise<void> {
  const { ctx, input, stats, entries, journal } = run;
  const changedRows = [...markRowsOf(run)].filter(([, r]) => r.unfinished.length < r.all);
  const replacements = changedRows.flatMap(([, r]) =>
    r.unfinished.length > 0 ? markRows(r.table, r.unfinished, ctx.now()) : [],
  );
  const unfinished = entries.flatMap((e) => (!e.done && e.journal ? [e.journal] : []));
  if (changedRows.length > 0) crashPoint('producer.before-cleanup');
  if (unfinished.length > 0) {
    // Never a correction among them: corrections belong to finished deletes, and recovered ones went out first.
    // This batch's retractions stay beside them until the older rows below are gone (a recovery retracts again).
    const retracted = entries.flatMap((e) => (e.tombstone && e.journal ? [e.journal] : []));
    await journal.write([...unfinished, ...retracted]);
    stats.pending = unfinished.map((i) => i.address.sk);
  }
  if (replacements.length > 0) {
    await batchWriteAll(
      ctx.ddb,
      ctx.options.marksTable,
      replacements.map((Item) => ({ PutRequest: { Item } })),
    );
  }
  // The last version just written stays when it carries unfinished items; every earlier one is superseded.
  const keep = new Set(unfinished.length > 0 ? journal.lastVersionKeys().map(keyId) : []);
  const obsolete = [
    ...(input.recovered?.rowKeys ?? []),
    ...journal.rowKeys().filter((k) => !keep.has(keyId(k))),
  ];
  // The mark rows go with the first journal rows, before any batch's latest version (../journal.ts).
  await deleteJournalRows(
    ctx.ddb,
    ctx.options.marksTable,
    obsolete,
    changedRows.map(([sk, r]) => rowKey(r.shard, sk)),
  );
  stats.acted += changedRows.length;
}
