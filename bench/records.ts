import { makeRecord } from '../test/support/archive-fixture';

/**
 * The REMOVE records the archiver benches archive (bench/archiver.ts through Kafka, bench/parquet-encode.ts without):
 * about 1.2 KB, two tables, an 800-byte payload of varied words.
 */

/** `words`: the payload is text (compresses like real attributes); `repeat`: one character repeated (earlier runs). */
export type PayloadKind = 'words' | 'repeat';

const WORDS = [
  'order',
  'shipped',
  'customer',
  'returned',
  'region',
  'north',
  'invoice',
  'pending',
  'gift',
  'express',
];

/** Record j: of table `orders` or `sessions` by its parity, its payload text of varied words or one letter repeated. */
export function benchRecord(j: number, deletedAtSec: number, payloadBytes: number, kind: PayloadKind) {
  const table = j % 2 ? 'orders' : 'sessions';
  const r = makeRecord(table, j, deletedAtSec, payloadBytes);
  if (kind === 'words') {
    let text = '';
    for (let w = 0; text.length < payloadBytes; w++)
      text += `${WORDS[(j * 31 + w * 7 + (w >> 3)) % WORDS.length]}-${(j + w) % 997} `;
    r.dynamodb.OldImage.payload = { S: text.slice(0, payloadBytes) };
  }
  return { table, record: r };
}
