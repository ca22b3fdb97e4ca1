import type { RollPlan } from '../archive/roll';
import { KeyIndexSchema, parseArchiveJson } from '../archive/storage/layout';
import type { EncodedRoll } from './writer';
import { planFileRewrite } from '../archive-tools/erase/plan';
import { rewriteFileBytes } from '../archive-tools/erase/rewrite';

export interface FilteredRoll {
  plan: RollPlan;
  encoded: EncodedRoll;
  /** Rows dropped per table because their key is in the erasure ledger. */
  dropped: Map<string, number>;
}

/**
 * A roll about to be written, without the rows of erased keys (`digests`: the whole ledger, read
 * by the worker just before). Messages of erased keys are already dropped when classified, but
 * against the ledger as last read; this catches the ones classified before an erasure's entry, so
 * a roll written after the entry cannot bring the key back. A roll already being written when the
 * entry appeared is the erase command's to wait for (it reports rolls in progress). A file left
 * without rows is left out of the roll; the roll still covers its offsets. No I/O.
 */
export async function dropErasedRows(
  plan: RollPlan,
  encoded: EncodedRoll,
  digests: ReadonlySet<string>,
): Promise<FilteredRoll> {
  const dropped = new Map<string, number>();
  if (digests.size === 0) return { plan, encoded, dropped };

  const files: RollPlan['files'] = [];
  const data: Buffer[] = [];
  const index: Buffer[] = [];
  let records = plan.records;
  for (const [i, file] of plan.files.entries()) {
    const body = encoded.data[i] as Buffer;
    const indexBody = encoded.index[i] as Buffer;
    const rewrite = planFileRewrite(
      parseArchiveJson(KeyIndexSchema, indexBody, file.indexPath),
      digests,
      file.path,
    );
    if (!rewrite) {
      files.push(file);
      data.push(body);
      index.push(indexBody);
      continue;
    }
    dropped.set(file.table, (dropped.get(file.table) ?? 0) + rewrite.removed);
    records -= rewrite.removed;
    if (rewrite.keep.length === 0) continue;
    const out = await rewriteFileBytes(body, file.path, rewrite);
    files.push({
      ...file,
      rows: [],
      index: rewrite.index,
      summary: { rows: out.rows, firstEventID: out.firstEventID, lastEventID: out.lastEventID },
    });
    data.push(out.data);
    index.push(out.index);
  }
  return { plan: { ...plan, files, records }, encoded: { data, index }, dropped };
}
