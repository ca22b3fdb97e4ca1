import { ValidationError } from '../../core/errors';
import { formatOfFile } from '../../archive/format';
import { encodeArchiveJson } from '../../archive/storage/layout';
import type { FileRewritePlan } from './plan';

export interface RewrittenFile {
  data: Buffer;
  index: Buffer;
  rows: number;
  firstEventID: string | null;
  lastEventID: string | null;
}

/**
 * The bytes of a data file and its key index without the rows a plan drops, in the file's own
 * format (a new file built from the kept rows only: archive/format/). No I/O: the erase command
 * and the archiver (a roll holding a key erased meanwhile) both use it. The data must agree with
 * the index the plan was made from, row for row, or nothing is rewritten.
 */
export async function rewriteFileBytes(
  body: Buffer,
  path: string,
  plan: FileRewritePlan,
): Promise<RewrittenFile> {
  const kept = await formatOfFile(path).keepRows(body, path, plan.keep);
  if (kept.total !== plan.keep.length + plan.removed)
    throw new ValidationError(
      `${path}: ${kept.total} rows, its key index ${plan.keep.length + plan.removed}; not rewritten`,
    );
  kept.eventIDs.forEach((eventID, i) => {
    if (eventID !== plan.index.rows[i]?.eventID)
      throw new ValidationError(`${path}: key index and data disagree at row ${plan.keep[i]}; not rewritten`);
  });
  return {
    data: kept.data,
    index: encodeArchiveJson(plan.index),
    rows: kept.eventIDs.length,
    firstEventID: kept.eventIDs[0] ?? null,
    lastEventID: kept.eventIDs.at(-1) ?? null,
  };
}
