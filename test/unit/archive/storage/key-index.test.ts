import {
  besideIndexPathFor,
  deleteKeyIndex,
  generationPath,
  indexPathFor,
  listWithIndexes,
  readKeyIndex,
} from '../../../../archive/storage';
import { collect, MemoryStorage } from '../../../support/archive-fixture';

/** A key index under `_index/` or beside its data file (docs/decisions/0033). */

const hour = 'table=t/date=2026-12-04/hour=03/';
const a = `${hour}x+0+00000000000000000000-00000000000000000009.parquet`;
const b = `${hour}x+0+00000000000000000010-00000000000000000019.parquet`;
const a1 = generationPath(a, 1);

async function storageWith(paths: string[]): Promise<MemoryStorage> {
  const s = new MemoryStorage();
  for (const p of paths) await s.put(p, Buffer.from(p));
  return s;
}

describe('key index places', () => {
  it('lists a prefix and its _index/ twin as one listing of the old layout: each file with its index, then its generations', async () => {
    // a: index beside (written before), a~1 and b: under _index/; another hour and table are not listed.
    const s = await storageWith([
      a,
      besideIndexPathFor(a),
      a1,
      indexPathFor(a1),
      b,
      indexPathFor(b),
      'table=t/date=2026-12-04/hour=04/y.parquet',
      indexPathFor('table=u/date=2026-12-04/hour=03/y.parquet'),
    ]);
    const listed = await collect(listWithIndexes(s, hour));
    expect(listed.map((p) => p.path)).toEqual([
      a,
      besideIndexPathFor(a),
      a1,
      indexPathFor(a1),
      b,
      indexPathFor(b),
    ]);
    expect(listed.map((p) => [p.dataPath, p.isIndex, p.beside])).toEqual([
      [a, false, false],
      [a, true, true],
      [a1, false, false],
      [a1, true, false],
      [b, false, false],
      [b, true, false],
    ]);
    // Both places at once (a move interrupted before its removal): beside, then _index/, adjacent.
    await s.put(indexPathFor(a), Buffer.from('moved'));
    expect((await collect(listWithIndexes(s, hour))).slice(0, 3).map((p) => p.path)).toEqual([
      a,
      besideIndexPathFor(a),
      indexPathFor(a),
    ]);
  });

  it('reads _index/ first, then beside, and deletes both', async () => {
    const s = await storageWith([besideIndexPathFor(a)]);
    expect(await readKeyIndex(s, a)).toEqual({
      path: besideIndexPathFor(a),
      body: Buffer.from(besideIndexPathFor(a)),
    });
    await s.put(indexPathFor(a), Buffer.from('new'));
    expect(await readKeyIndex(s, a)).toEqual({ path: indexPathFor(a), body: Buffer.from('new') });
    expect(await readKeyIndex(s, b)).toBeNull();
    await deleteKeyIndex(s, a);
    expect([...s.objects.keys()]).toEqual([]);
  });
});
