import { readDeletions, type ArchivedDeletion } from '../../../../archive-tools/audit';
import { readArchiveFile } from '../../../../archive/reader';
import { canonicalJson } from '../../../../schemas';
import type { TableTtlSettings } from '../../../../policy';
import { MemoryStorage, removeRow, retractRow, writeRoll } from '../../../support/archive-fixture';

const table = 'orders';
const settings: TableTtlSettings = { policy: { mode: 'dynamodb', attributeName: 'expiresAt' } };
const T = 1_714_564_800; // 2024-05-01T12:00:00Z, seconds
const k = (pk: string) => ({ pk: { S: pk } });
const img = (ttlS: number) => ({ expiresAt: { N: String(ttlS) } });

async function all(it: AsyncIterable<ArchivedDeletion>): Promise<ArchivedDeletion[]> {
  const out: ArchivedDeletion[] = [];
  for await (const d of it) out.push(d);
  return out;
}

describe('readDeletions: archived REMOVEs through the catalog', () => {
  it('reads each eventID once with its TTL instant, Kafka coordinates, file and row; marks retracted ones', async () => {
    const storage = new MemoryStorage();
    const a = removeRow({ table, keys: k('a'), image: img(T), deletedAtS: T + 2 });
    const b = removeRow({ table, keys: k('b'), image: img(T + 10), deletedAtS: T + 4000 }); // next hour: late
    const c = removeRow({ table, keys: k('c'), image: img(T + 20), deletedAtS: T + 21 });
    const old = removeRow({ table, keys: k('old'), image: img(T - 7200), deletedAtS: T - 7000 });
    const other = removeRow({ table: 'other', keys: k('a'), image: img(T), deletedAtS: T + 2 });
    await writeRoll(storage, [old, a, c, other], { partition: 1, first: 10n });
    // A re-publish of `a` archived again later (outside the archiver's de-duplication), then the retraction of c.
    await writeRoll(storage, [b, a, retractRow(c, (T + 3700) * 1000)], { partition: 1, first: 14n });

    const progress: Array<[number, number]> = [];
    const got = await all(
      readDeletions(storage, {
        table,
        settings,
        window: { fromMs: T * 1000, toMs: (T + 60) * 1000 },
        nowMs: (T + 7200) * 1000,
        keyOf: (keys) => `key:${canonicalJson(keys)}`,
        onProgress: (done, total) => progress.push([done, total]),
      }),
    );
    // `old` was deleted before the window opened: a deletion is never before its TTL instant, so it is not read.
    expect(got.map((d) => d.eventID).sort()).toEqual([a.eventID, b.eventID, c.eventID].sort());
    const byId = new Map(got.map((d) => [d.eventID, d]));
    expect(byId.get(a.eventID)).toMatchObject({
      key: 'key:{"pk":{"S":"a"}}',
      ttlAtMs: T * 1000,
      deletedAtMs: (T + 2) * 1000,
      publishedAtMs: (T + 2) * 1000,
      topic: 'ttlstream.remove',
      partition: 1,
      offset: '11',
      retracted: false,
    });
    expect(byId.get(b.eventID)).toMatchObject({ ttlAtMs: (T + 10) * 1000, offset: '14', retracted: false });
    expect(byId.get(c.eventID)).toMatchObject({ retracted: true });
    for (const d of got) {
      const rows = await readArchiveFile(storage, d.file);
      expect(rows[d.row]?.eventID).toBe(d.eventID);
      expect(rows[d.row]?.offset).toBe(d.offset);
    }
    // Progress counts the data files holding REMOVEs of the span: the re-published `a` sits in a file of its own.
    expect(progress[0]).toEqual([0, 3]);
    expect(progress[progress.length - 1]).toEqual([3, 3]);
  });

  it("a REMOVE whose image has no TTL under today's settings comes with a null instant", async () => {
    const storage = new MemoryStorage();
    const r = removeRow({ table, keys: k('x'), image: { note: { S: 'no ttl' } }, deletedAtS: T });
    await writeRoll(storage, [r]);
    const got = await all(
      readDeletions(storage, {
        table,
        settings,
        window: { fromMs: T * 1000, toMs: (T + 1) * 1000 },
        nowMs: (T + 10) * 1000,
        keyOf: () => 'k',
      }),
    );
    expect(got).toMatchObject([{ eventID: r.eventID, ttlAtMs: null }]);
  });

  it('a damaged data file is an error naming it, never fewer rows', async () => {
    const storage = new MemoryStorage();
    const [file] = await writeRoll(storage, [
      removeRow({ table, keys: k('x'), image: img(T), deletedAtS: T }),
    ]);
    const body = storage.objects.get(file as string) as Buffer;
    storage.objects.set(file as string, body.subarray(0, body.length - 20));
    await expect(
      all(
        readDeletions(storage, {
          table,
          settings,
          window: { fromMs: T * 1000, toMs: (T + 1) * 1000 },
          nowMs: (T + 10) * 1000,
          keyOf: () => 'k',
        }),
      ),
    ).rejects.toThrow(file as string);
  });
});
