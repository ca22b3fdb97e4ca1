import {
  bitsFor,
  buildDayIndex,
  filesOfDigest,
  newestDayIndex,
  parseDayIndexBucket,
  bucketOfDigest,
} from '../../../../archive/catalog/day-index';
import { keyDigest } from '../../../../schemas';

const digestOf = (i: number): string => keyDigest('orders', { pk: { S: `k-${i}` } });

describe('the day key index (docs/decisions/0038)', () => {
  it('answers which files hold a key digest, from the bucket its top bits name, and no others', () => {
    const files = [
      'table=orders/date=2025-01-01/hour=00/a.parquet',
      'table=orders/date=2025-01-01/hour=01/b.parquet',
    ];
    const digests = [
      Array.from({ length: 30_000 }, (_, i) => digestOf(i)),
      Array.from({ length: 30_000 }, (_, i) => digestOf(i + 20_000)),
    ];
    const buckets = buildDayIndex('orders', '2025-01-01', files, digests, 1_700_000_000_000);
    expect(Math.log2(buckets.length)).toBe(bitsFor(60_000));
    const parsed = buckets.map((b) => parseDayIndexBucket(b.body, b.path));
    const holders = (i: number): number[] => {
      const d = digestOf(i);
      return filesOfDigest(
        parsed[bucketOfDigest(d, parsed[0]?.header.bits ?? 0)] as (typeof parsed)[number],
        d,
      );
    };
    expect(holders(5)).toEqual([0]);
    expect(holders(25_000)).toEqual([0, 1]);
    expect(holders(45_000)).toEqual([1]);
    expect(holders(99_999)).toEqual([]);
    expect(parsed.every((p) => JSON.stringify(p.header.files) === JSON.stringify(files))).toBe(true);
    // Digests only, never a key.
    expect(Buffer.concat(buckets.map((b) => b.body)).includes('k-5')).toBe(false);
  });

  it('reads the newest whole version: one missing a bucket (a build interrupted) is not one', () => {
    const old = buildDayIndex('orders', '2025-01-01', ['a'], [[digestOf(1)]], 1_000).map((b) => b.path);
    const partial = buildDayIndex(
      'orders',
      '2025-01-01',
      ['a', 'b'],
      [Array.from({ length: 60_000 }, (_, i) => digestOf(i)), []],
      2_000,
    )
      .map((b) => b.path)
      .slice(1);
    expect(newestDayIndex([...old, ...partial])?.paths).toEqual(old);
    expect(newestDayIndex(partial)).toBeNull();
  });
});
