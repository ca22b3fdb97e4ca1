import { ValidationError } from '../../core/errors';
import { archivedRecordType, type AvroArchivedRecord } from '../../schemas';
import { ContainerWriter, decodeContainer } from '../container';
import { checkContainerFraming } from '../reader';
import { encodeArchiveJson } from '../storage/layout';
import { DATA_BLOCK_BYTES } from '../writer';
import type { FileRewritePlan } from './plan';

export interface RewrittenFile {
  data: Buffer;
  index: Buffer;
  rows: number;
  firstEventID: string | null;
  lastEventID: string | null;
}

/**
 * The bytes of a data file and its key index without the rows a plan drops. No I/O: the erase
 * command and the archiver (a roll holding a key erased meanwhile) both use it. The data must
 * agree with the index the plan was made from, row for row, or nothing is rewritten.
 */
export async function rewriteFileBytes(
  body: Buffer,
  path: string,
  plan: FileRewritePlan,
): Promise<RewrittenFile> {
  const { rows: framed } = checkContainerFraming(body, path);
  const decoded = await decodeContainer<AvroArchivedRecord>(body, { readerSchema: archivedRecordType });
  if (decoded.rows.length !== framed || decoded.rows.length !== plan.keep.length + plan.removed)
    throw new ValidationError(
      `${path}: ${decoded.rows.length} rows (blocks say ${framed}), its key index ${plan.keep.length + plan.removed}; not rewritten`,
    );
  const writer = new ContainerWriter(archivedRecordType, { codec: 'deflate', blockBytes: DATA_BLOCK_BYTES });
  const kept: AvroArchivedRecord[] = [];
  for (const [i, rowNumber] of plan.keep.entries()) {
    const row = decoded.rows[rowNumber];
    if (!row || row.eventID !== plan.index.rows[i]?.eventID)
      throw new ValidationError(`${path}: key index and data disagree at row ${rowNumber}; not rewritten`);
    writer.append(row);
    kept.push(row);
  }
  return {
    data: await writer.finish(),
    index: encodeArchiveJson(plan.index),
    rows: kept.length,
    firstEventID: kept[0]?.eventID ?? null,
    lastEventID: kept[kept.length - 1]?.eventID ?? null,
  };
}
