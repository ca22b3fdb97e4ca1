import { openCatalog } from '../../../../archive/catalog';
import {
  eraseArchive,
  planFileRewrite,
  supersededPaths,
  withGeneration,
} from '../../../../archive-tools/erase';
import {
  ErasureEntrySchema,
  erasurePath,
  eraseRecordPath,
  type EraseRecord,
  type Generation,
} from '../../../../archive/ledgers/erasure-records';
import { prepareRow } from '../../../../archive/rows';
import { generationPath, indexPathFor, type KeyIndex } from '../../../../archive/storage';
import { verifyArchive } from '../../../../archive-tools/verify';
import { keyDigest, toArchived, type AttributeMap } from '../../../../schemas';
import {
  archiveRows,
  findingKinds,
  makeRecord,
  MemoryStorage,
  withKeys,
} from '../../../support/archive-fixture';

const SUBJECT: AttributeMap = { pk: { S: 'subject' }, sk: { N: '1' } };
const H = Math.floor(Date.UTC(2024, 4, 1, 10, 0) / 1000);

function indexOf(keys: string[]): KeyIndex {
  return {
    file: 'f.avro',
    table: 'users',
    topic: 't',
    partition: 0,
    first: '0',
    last: String(keys.length - 1),
    rows: keys.map((key, row) => ({
      key,
      eventID: `e${row}`,
      kind: 'remove' as const,
      deletedAtMs: row,
      sequenceNumber: String(row),
      row,
    })),
  };
}

describe('erasure plan (pure)', () => {
  const subject = keyDigest('users', SUBJECT);
  const other = '{"pk":{"S":"other"},"sk":{"N":"1"}}';

  it('drops the rows of erased keys whatever the number spelling, renumbers the rest, counts per key', () => {
    const plan = planFileRewrite(
      indexOf([
        other,
        '{"pk":{"S":"subject"},"sk":{"N":"1.0"}}',
        other,
        '{"sk":{"N":"1"},"pk":{"S":"subject"}}',
      ]),
      new Set([subject]),
      'f~1.avro',
    );
    expect(plan).not.toBeNull();
    expect(plan?.keep).toEqual([0, 2]);
    expect(plan?.removed).toBe(2);
    expect(plan?.erased).toEqual({ [subject]: 2 });
    expect(plan?.index.file).toBe('f~1.avro');
    expect(plan?.index.rows.map((r) => [r.row, r.eventID])).toEqual([
      [0, 'e0'],
      [1, 'e2'],
    ]);
  });

  it('leaves a file without the keys alone, and the same key of another table too', () => {
    expect(planFileRewrite(indexOf([other]), new Set([subject]), 'x')).toBeNull();
    const index = { ...indexOf(['{"pk":{"S":"subject"},"sk":{"N":"1"}}']), table: 'orders' };
    expect(planFileRewrite(index, new Set([subject]), 'x')).toBeNull();
  });

  it('a new generation replaces an attempt that never switched, keeps the ones before', () => {
    const g = (generation: number): Generation => ({
      generation,
      prev: '0'.repeat(64),
      sealed: {
        path: `f~${generation}.avro`,
        sha256: '1'.repeat(64),
        bytes: 1,
        rows: 1,
        firstEventID: null,
        lastEventID: null,
        index: { sha256: '2'.repeat(64), bytes: 1 },
      },
      rowsRemoved: 1,
      erased: {},
      atMs: 0,
      actor: 'a',
    });
    const link = { path: 'm', sha256: '3'.repeat(64) };
    const record: EraseRecord = { file: 'f.avro', manifest: link, generations: [g(1), g(2)] };
    expect(withGeneration(record, 'f.avro', link, g(2)).generations.map((x) => x.generation)).toEqual([1, 2]);
    expect(withGeneration(record, 'f.avro', link, g(3)).generations.map((x) => x.generation)).toEqual([
      1, 2, 3,
    ]);
    expect(withGeneration(null, 'f.avro', link, g(1)).generations).toHaveLength(1);
    expect(supersededPaths('a/f.avro', 2)).toEqual({
      data: ['a/f.avro', 'a/f~1.avro'],
      // Each at either place: under _index/, or beside (an archive written before that layout).
      index: [
        '_index/a/f.avro.idx.json',
        'a/f.avro.idx.json',
        '_index/a/f~1.avro.idx.json',
        'a/f~1.avro.idx.json',
      ],
    });
  });

  it('the ledger entry names a digest, never a key', () => {
    const entry = {
      table: 'users',
      digest: keyDigest('users', SUBJECT),
      erasedAtMs: 1,
      reason: null,
      actor: 'cli:x',
      state: 'done',
      files: [],
      rowsRemoved: 0,
    };
    expect(ErasureEntrySchema.parse({ ...entry, key: SUBJECT })).not.toHaveProperty('key');
    expect(() => ErasureEntrySchema.parse({ ...entry, digest: 'subject' })).toThrow();
    expect(erasurePath('users', entry.digest)).toBe(`_erasure/users/${entry.digest}.json`);
    expect(() => erasurePath('users', '{"pk":{"S":"subject"}}')).toThrow();
  });
});

/** 12 records of users in rolls of 3; the subject's at i = 1, 4 and 10. */
async function memoryArchiveWithSubject(): Promise<MemoryStorage> {
  const storage = new MemoryStorage();
  const rows = Array.from({ length: 12 }, (_, i) => {
    const r = makeRecord('users', i, H + i * 900, 50);
    return prepareRow(
      toArchived(
        { kind: 'remove', record: [1, 4, 10].includes(i) ? withKeys(r, SUBJECT) : r },
        { topic: 't', partition: 0, offset: String(i), timestamp: '1' },
      ),
    );
  });
  await archiveRows(storage, 't', rows, { perRoll: 3 });
  return storage;
}

async function erased(): Promise<{ storage: MemoryStorage; gens: string[] }> {
  const storage = await memoryArchiveWithSubject();
  const result = await eraseArchive(storage, { table: 'users', keys: [SUBJECT], reason: null, actor: 't' });
  expect(result.rowsRemoved).toBe(3);
  const gens = [...storage.objects.keys()].filter((k) => /~1\.avro$/.test(k)).sort();
  expect(gens).toHaveLength(3);
  expect((await verifyArchive(storage)).findings).toEqual([]);
  return { storage, gens };
}

/** What verify finds, each kind once. */
async function distinctKinds(s: MemoryStorage): Promise<string[]> {
  return [...new Set(await findingKinds(s))];
}

describe('archive verify after an erasure catches tampering of a generation', () => {
  it('an altered generation file or index', async () => {
    const { storage, gens } = await erased();
    const g = gens[0] as string;
    const body = storage.objects.get(g) as Buffer;
    storage.objects.set(g, Buffer.concat([body, Buffer.from('x')]));
    expect(await distinctKinds(storage)).toEqual(['altered-file']);
    storage.objects.set(g, body);
    storage.objects.set(indexPathFor(g), Buffer.from('{}'));
    expect(await distinctKinds(storage)).toEqual(['altered-index']);
  });

  it('a removed generation (data and index), or its index alone', async () => {
    const { storage, gens } = await erased();
    const g = gens[1] as string;
    storage.objects.delete(indexPathFor(g));
    expect(await distinctKinds(storage)).toEqual(['missing-file', 'missing-index']);
    storage.objects.delete(g);
    expect(await distinctKinds(storage)).toEqual(['missing-file', 'missing-index']);
  });

  it('a removed or edited erase record', async () => {
    const { storage, gens } = await erased();
    const base = (gens[2] as string).replace('~1.avro', '.avro');
    const path = eraseRecordPath(base);
    const body = storage.objects.get(path) as Buffer;
    const record = JSON.parse(body.toString()) as EraseRecord;
    const g1 = record.generations[0] as Generation;
    storage.objects.set(
      path,
      Buffer.from(JSON.stringify({ ...record, generations: [{ ...g1, prev: 'f'.repeat(64) }] })),
    );
    expect(await distinctKinds(storage)).toEqual(['bad-erase']);
    storage.objects.delete(path);
    expect(await distinctKinds(storage)).toEqual(['extra-file', 'missing-file', 'missing-index']);
  });

  it('a generation no record names', async () => {
    const { storage } = await erased();
    const base = [...storage.objects.keys()].find((k) => k.endsWith('.avro') && !k.includes('~')) as string;
    storage.objects.set(generationPath(base, 5), Buffer.from('x'));
    expect(await distinctKinds(storage)).toEqual(['extra-file']);
  });

  it('readers take the newest generation with its index; the catalog hides the key from the ledger on', async () => {
    const storage = await memoryArchiveWithSubject();
    const catalog = openCatalog(storage);
    const before = [];
    for await (const f of catalog.listFiles('users')) before.push(f);
    expect(before.every((f) => f.generation === 0)).toBe(true);
    // An unfinished generation (data, no index) is not read.
    const base = before[0]?.path as string;
    storage.objects.set(generationPath(base, 1), Buffer.from('debris'));
    const mid = [];
    for await (const f of openCatalog(storage).listFiles('users')) mid.push(f.path);
    expect(mid[0]).toBe(base);
    storage.objects.set(
      erasurePath('users', keyDigest('users', SUBJECT)),
      Buffer.from('{}'), // the name is what the catalog reads
    );
    const rows = [];
    for await (const r of openCatalog(storage).scan('users')) rows.push(r);
    expect(rows).toHaveLength(9);
  });
});

describe('purge after an erasure', () => {
  it('removes every generation of a due file, and verify counts it purged', async () => {
    const { storage } = await erased();
    const { purgeArchive } = await import('../../../../archive-tools/purge');
    const result = await purgeArchive(storage, { retentionDays: async () => 1, actor: 't' });
    expect(result.files).toHaveLength(6); // 12 records over hours 10..12, rolls of 3
    expect([...storage.objects.keys()].filter((k) => k.startsWith('table='))).toEqual([]);
    const report = await verifyArchive(storage);
    expect(report.findings).toEqual([]);
    expect(report).toMatchObject({ purged: 6, purgeInProgress: [] });
  });
});

describe('a roll written after an erasure', () => {
  it('leaves out the erased key (a file left empty goes), and the manifest seals what was written', async () => {
    const storage = new MemoryStorage();
    storage.objects.set(erasurePath('users', keyDigest('users', SUBJECT)), Buffer.from('{}'));
    // Offset 0: the subject in hour 10 alone; 1 and 2: other keys in hour 11.
    const written = ([H, H + 3600, H + 3700] as const).map((at, i) => {
      const r = makeRecord('users', i + 20, at, 50);
      return prepareRow(
        toArchived(
          { kind: 'remove', record: i === 0 ? withKeys(r, SUBJECT) : r },
          { topic: 't', partition: 0, offset: String(i), timestamp: '1' },
        ),
      );
    });
    await archiveRows(storage, 't', written, { perRoll: 3 });
    const data = [...storage.objects.keys()].filter((k) => k.endsWith('.avro'));
    expect(data).toHaveLength(1);
    expect(data[0]).toContain('hour=11');
    const manifest = JSON.parse(
      storage.objects.get('_manifest/t/0/00000000000000000000-00000000000000000002.json')?.toString() ?? '{}',
    ) as { records: number; state: string };
    expect(manifest).toMatchObject({ state: 'complete', records: 2 });
    const rows = [];
    for await (const r of openCatalog(storage).scan('users')) rows.push(r);
    expect(rows).toHaveLength(2);
    const report = await verifyArchive(storage);
    expect(report.findings).toEqual([]);
    expect(report.rows).toBe(2);
  });
});
