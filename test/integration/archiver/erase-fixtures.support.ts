import { prepareRow } from '../../../archive/rows';
import type { ArchiveStorage } from '../../../archive/storage';
import { toArchived, type AttributeMap, type StreamRecord } from '../../../schemas';
import { archiveRows, makeRecord, withKeys } from '../../support/archive-fixture';

/** The data subject of the erasure tests: its records sit in several files of `users`, and once in `orders`. */
export const SUBJECT: AttributeMap = { pk: { S: 'subject-42' }, sk: { N: '1' } };
export const SUBJECT_JSON = '{"pk":{"S":"subject-42"},"sk":{"N":"1.0"}}';
export const HOUR = 3_600_000;

/**
 * 30 records 2 hours apart over `users` and `orders`, rolls of 5 offsets (so one file per record
 * and roll). The subject's records are users' i = 4, 10, 16, 24 (four rolls) and orders' i = 7
 * (another table: the same key there is another item, not erased with users').
 */
export async function seedErasable(storage: ArchiveStorage, topic = 'erase-t'): Promise<StreamRecord[]> {
  const now = Date.now();
  const records: StreamRecord[] = [];
  for (let i = 0; i < 30; i++) {
    const table = i % 2 ? 'orders' : 'users';
    const r = makeRecord(table, i, Math.floor((now - (30 - i) * 2 * HOUR) / 1000), 200);
    records.push([4, 10, 16, 24, 7].includes(i) ? withKeys(r, SUBJECT) : r);
  }
  const rows = records.map((record, i) =>
    prepareRow(
      toArchived(
        { kind: 'remove', record },
        { topic, partition: 0, offset: String(i), timestamp: String(now) },
      ),
    ),
  );
  await archiveRows(storage, topic, rows, { perRoll: 5, timestampMs: now });
  return records;
}

export function isSubjectOf(table: string) {
  return (r: StreamRecord, recordTable: string): boolean =>
    recordTable === table && r.dynamodb.Keys.pk?.S === 'subject-42';
}
