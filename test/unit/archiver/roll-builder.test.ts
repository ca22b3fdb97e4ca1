import { InternalError } from '../../../core/errors';
import { decodeContainer } from '../../../archive/format/avro-container';
import { prepareRow, type PreparedRow } from '../../../archive/rows';
import { manifestOf, planRoll } from '../../../archive/roll';
import { INDEX_ROW_FIELDS, RollBuilder, indexLine } from '../../../archiver/roll-builder';
import { encodeArchiveJson } from '../../../archive/storage/layout';
import { encodeRoll } from '../../../archiver/writer';
import { type ArchivedRecord } from '../../../schemas';
import { removeRowAt, retractRowAt } from '../../support/archive-fixture';

/**
 * The partition worker builds rolls row by row (RollBuilder); planRoll + encodeRoll is the
 * reference: the same files in the same order, the same rows, byte-identical key indexes.
 */

const TOPIC = 'stream';
const H10 = Math.floor(Date.UTC(2024, 4, 1, 10, 0) / 1000);

async function both(rows: PreparedRow[], first: bigint, last: bigint) {
  const builder = new RollBuilder(TOPIC, 1);
  for (const r of rows) builder.add(r);
  const built = await builder.finish(first, last);
  const plan = planRoll(TOPIC, 1, first, last, rows);
  const reference = await encodeRoll(plan);
  return { built, plan, reference };
}

describe('RollBuilder', () => {
  it('builds what planRoll + encodeRoll build: files, rows, key indexes, manifest', async () => {
    const rows: PreparedRow[] = [];
    let offset = 100;
    const tables = ['orders', 'sessions', 'a.b-c_d'];
    for (let i = 0; i < 300; i++) {
      const table = tables[i % 3] as string;
      // Three UTC hours, rows of one file interleaved with others.
      const remove = removeRowAt(TOPIC, table, offset, H10 + ((i * 977) % 10_800));
      rows.push(prepareRow(remove));
      offset += 1 + (i % 4 === 0 ? 1 : 0); // gaps: poison or duplicates without a row
      if (i % 25 === 0) {
        rows.push(prepareRow(retractRowAt(offset, remove, (H10 + 7200) * 1000 + i)));
        offset += 1;
      }
    }
    const first = 100n;
    const last = BigInt(offset + 3);
    const { built, plan, reference } = await both(rows, first, last);

    expect(built.plan.records).toBe(plan.records);
    expect(built.plan.manifestPath).toBe(plan.manifestPath);
    expect(manifestOf(built.plan, 'writing')).toEqual(manifestOf(plan, 'writing'));
    expect(built.plan.files.map((f) => [f.path, f.indexPath, f.table])).toEqual(
      plan.files.map((f) => [f.path, f.indexPath, f.table]),
    );
    expect(plan.files.length).toBeGreaterThan(6);
    for (let i = 0; i < plan.files.length; i++) {
      expect((built.encoded.index[i] as Buffer).equals(reference.index[i] as Buffer)).toBe(true);
      expect(
        (built.encoded.index[i] as Buffer).equals(
          encodeArchiveJson((plan.files[i] as { index: unknown }).index),
        ),
      ).toBe(true);
      const a = await decodeContainer(built.encoded.data[i] as Buffer);
      const b = await decodeContainer(reference.data[i] as Buffer);
      expect(a.rows).toEqual(b.rows);
      expect(a.schema).toEqual(b.schema);
      expect(a.codec).toBe('deflate');
    }
  });

  it('refuses rows out of offset order or outside the range, as planRoll does', async () => {
    const rows = [10, 11, 12].map((o) => prepareRow(removeRowAt(TOPIC, 'orders', o, H10 + o)));
    const unordered = new RollBuilder(TOPIC, 1);
    unordered.add(rows[1] as PreparedRow);
    expect(() => unordered.add(rows[0] as PreparedRow)).toThrow(InternalError);
    const builder = new RollBuilder(TOPIC, 1);
    for (const r of rows) builder.add(r);
    await expect(builder.finish(11n, 12n)).rejects.toThrow(InternalError);
    await expect(builder.finish(10n, 11n)).rejects.toThrow(InternalError);
    await expect(builder.finish(10n, 12n)).resolves.toBeDefined();
  });

  it('writes key-index lines as JSON.stringify would, fields in the order rows create them', () => {
    const remove = removeRowAt(TOPIC, 'orders', 7, H10);
    const rows = [prepareRow(remove), prepareRow(retractRowAt(8, remove, H10 * 1000 + 1))];
    for (const r of rows) {
      expect(indexLine(r.index, 3)).toBe(JSON.stringify({ ...r.index, row: 3 }));
      const order = Object.keys({ ...r.index, row: 3 }).map(
        (k) => INDEX_ROW_FIELDS[k as keyof typeof INDEX_ROW_FIELDS],
      );
      expect(order).toEqual([...order].sort((a, b) => a - b));
    }
    const odd = { ...(rows[0] as PreparedRow).index, key: `{"pk":{"S":"\u2028 \\"q\\" \\\\ é\t"}}` };
    expect(indexLine(odd, 0)).toBe(JSON.stringify({ ...odd, row: 0 }));
  });

  it('a roll without rows (only poison or duplicates) has no files', async () => {
    const { built, plan } = await both([], 5n, 9n);
    expect(built.plan.files).toEqual([]);
    expect(manifestOf(built.plan, 'complete')).toEqual(manifestOf(plan, 'complete'));
  });

  it('rows beyond one container block are split into blocks and all kept', async () => {
    const rows: PreparedRow[] = [];
    for (let i = 0; i < 4000; i++) rows.push(prepareRow(removeRowAt(TOPIC, 'orders', i, H10 + 5)));
    const { built } = await both(rows, 0n, 3999n);
    const decoded = await decodeContainer<ArchivedRecord>(built.encoded.data[0] as Buffer);
    expect(decoded.rows).toHaveLength(4000);
  });
});
