import { avroFormat, parquetFormat } from '../../../../archive/format';
import { mergeDataFiles, type MergeOrder, type MergeSource } from '../../../../archive/format/merge';
import type { DataFormat } from '../../../../archive/storage';
import { ValidationError } from '../../../../core/errors';
import type { ArchivedRecord } from '../../../../schemas';
import { removeRow } from '../../../support/archive-fixture';

const T = 1_735_689_600; // 2025-01-01T00:00:00Z

function rows(from: number, n: number): ArchivedRecord[] {
  return Array.from({ length: n }, (_, i) =>
    removeRow(
      {
        table: 'orders',
        keys: { pk: { S: `k${from + i}` } },
        image: { n: { N: String(i) } },
        deletedAtS: T + i,
      },
      { offset: BigInt(from + i) },
    ),
  );
}

async function sourcesOf(format: DataFormat, files: ArchivedRecord[][]): Promise<MergeSource[]> {
  const codec = format === 'parquet' ? parquetFormat : avroFormat;
  return Promise.all(
    files.map(async (r, s) => {
      const body = await codec.encode(r, { ttl: null });
      return { path: `s${s}.${format}`, read: async () => body };
    }),
  );
}

/** Source rows to output rows: `places[s][r]` (-1: left out), eventIDs as the rows hold them unless `ids` says. */
function orderOf(
  files: ArchivedRecord[][],
  places: number[][],
  ids: Record<number, string> = {},
): MergeOrder {
  const n = places.flat().filter((p) => p >= 0).length;
  const eventIDs = new Array<string>(n);
  places.forEach((p, s) =>
    p.forEach((to, r) => {
      if (to >= 0) eventIDs[to] = (files[s]?.[r] as ArchivedRecord).eventID;
    }),
  );
  for (const [to, id] of Object.entries(ids)) eventIDs[Number(to)] = id;
  return { rows: n, at: places.map((p) => Int32Array.from(p)), eventIDs };
}

describe('mergeDataFiles: sources one at a time into the output, in the order asked', () => {
  it.each([
    ['parquet', 'parquet'],
    ['avro', 'parquet'],
    ['parquet', 'avro'],
  ] as const)('%s sources into a %s file: every row placed, a row left out stays out', async (from, to) => {
    const files = [rows(0, 3), rows(10, 2)];
    const sources = await sourcesOf(from, files);
    // Interleaved, the second source's first row left out.
    const order = orderOf(files, [
      [0, 2, 3],
      [-1, 1],
    ]);
    const body = await mergeDataFiles(to, sources, order);
    const codec = to === 'parquet' ? parquetFormat : avroFormat;
    const out = await codec.decode(body, `out.${to}`);
    expect(out.map((r) => r.eventID)).toEqual(order.eventIDs);
    expect(out.map((r) => r.offset)).toEqual(['0', '11', '1', '2']);
  });

  it('refuses a row whose eventID is not the one its key index names, and a source short of the rows named', async () => {
    const files = [rows(0, 2)];
    const sources = await sourcesOf('parquet', files);
    const wrong = orderOf(files, [[0, 1]], { 1: 'not-this-one' });
    await expect(mergeDataFiles('parquet', sources, wrong)).rejects.toThrow(
      new ValidationError('s0.parquet: row 1 is not not-this-one as its key index says; not compacted'),
    );
    // The index names a third row the file does not hold.
    const short = orderOf(files, [[0, 1]]);
    const beyond: MergeOrder = {
      ...short,
      rows: 3,
      at: [Int32Array.from([0, 1, 2])],
      eventIDs: [...short.eventIDs, 'x'],
    };
    await expect(mergeDataFiles('parquet', sources, beyond)).rejects.toThrow(
      new ValidationError('s0.parquet: holds 2 of the 3 rows its key index names; not compacted'),
    );
    await expect(mergeDataFiles('avro', await sourcesOf('avro', files), beyond)).rejects.toThrow(
      new ValidationError('s0.avro: holds 2 of the 3 rows its key index names; not compacted'),
    );
  });

  it('names a source that is not a readable file, and a read that fails fails the merge', async () => {
    const files = [rows(0, 2)];
    const [good] = await sourcesOf('parquet', files);
    const body = Buffer.from(await (good as MergeSource).read());
    body.fill(0, 8, body.length - 12); // pages gone, framing kept
    const order = orderOf(files, [[0, 1]]);
    await expect(
      mergeDataFiles('parquet', [{ path: 'bad.parquet', read: async () => body }], order),
    ).rejects.toThrow(/^bad\.parquet: not a readable Parquet file/);
    const failing: MergeSource = {
      path: 'gone.parquet',
      read: async () => {
        throw new ValidationError('gone.parquet: missing');
      },
    };
    await expect(mergeDataFiles('parquet', [failing], order)).rejects.toThrow('gone.parquet: missing');
  });
});
