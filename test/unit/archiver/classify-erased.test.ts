import type { KafkaMessage } from 'kafkajs';
import { classifyMessage } from '../../../archiver/classify';
import { RecentIds } from '../../../archiver/dedup';
import { keyDigest, type AttributeMap } from '../../../schemas';
import { makeRecord, removeMessage, withKeys } from '../../support/archive-fixture';

const SUBJECT: AttributeMap = { pk: { S: 'subject' }, sk: { N: '1' } };

function message(keys: AttributeMap, table = 'users'): KafkaMessage {
  const r = makeRecord(table, 1, 1_700_000_000, 50);
  const m = removeMessage(withKeys(r, keys), table);
  return {
    key: Buffer.from(m.key as string),
    value: m.value as Buffer,
    headers: m.headers ?? {},
    timestamp: '1',
    offset: '7',
    attributes: 0,
  } as KafkaMessage;
}

describe('classification of a record of an erased key', () => {
  it('is dropped by its message key digest (the ledger digest), before decoding or de-duplication', () => {
    const dedup = new RecentIds(10);
    const erased = new Set([keyDigest('users', { sk: { N: '1.0' }, pk: { S: 'subject' } })]);
    expect(classifyMessage('t', 0, message(SUBJECT), dedup, erased)).toEqual({
      kind: 'erased',
      table: 'users',
    });
    expect(dedup.size).toBe(0);
    // Another key, or the same key of another table, is archived.
    expect(classifyMessage('t', 0, message({ pk: { S: 'other' }, sk: { N: '1' } }), dedup, erased).kind).toBe(
      'row',
    );
    expect(classifyMessage('t', 0, message(SUBJECT, 'orders'), dedup, erased).kind).toBe('row');
    // Without a ledger snapshot nothing is dropped.
    expect(classifyMessage('t', 0, message(SUBJECT), new RecentIds(10)).kind).toBe('row');
  });
});
