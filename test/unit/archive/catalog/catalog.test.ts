import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openCatalog, type CatalogRow } from '../../../../archive/catalog';
import {
  FsArchiveStorage,
  besideIndexPathFor,
  indexPathFor,
  type ArchiveStorage,
} from '../../../../archive/storage';
import { ValidationError } from '../../../../core/errors';
import { collect, removeRow, retractRow, writeRoll } from '../../../support/archive-fixture';

const H = 3_600_000;
const T0 = Date.UTC(2025, 2, 10, 22, 0, 0); // 22:00 UTC; +2 h crosses midnight
const s = (ms: number): number => Math.floor(ms / 1000);

/** Storage that records what was listed and read, to prove what the catalog touches. */
class Recording implements ArchiveStorage {
  readonly kind = 'fs' as const;
  readonly root: string;
  listed: string[] = [];
  read: string[] = [];
  constructor(private readonly inner: ArchiveStorage) {
    this.root = inner.root;
  }
  put(path: string, body: Buffer): Promise<void> {
    return this.inner.put(path, body);
  }
  get(path: string): Promise<Buffer | null> {
    this.read.push(path);
    return this.inner.get(path);
  }
  list(prefix: string): AsyncIterable<string> {
    this.listed.push(prefix);
    return this.inner.list(prefix);
  }
  delete(path: string): Promise<void> {
    return this.inner.delete(path);
  }
  putIfAbsent(path: string, body: Buffer): Promise<boolean> {
    return this.inner.putIfAbsent(path, body);
  }
  move(from: string, to: string): Promise<void> {
    return this.inner.move(from, to);
  }
}

let dir: string;
let storage: Recording;

// orders: user#1 deleted at T0+10m and again at T0+2h05; user#2 at T0+1h30; admin#1 at T0+3h (retracted at T0+5h)
const o1a = removeRow({
  table: 'orders',
  keys: { pk: { S: 'user#1' } },
  image: { v: { N: '1' } },
  deletedAtS: s(T0 + 600_000),
});
const o1b = removeRow({
  table: 'orders',
  keys: { pk: { S: 'user#1' } },
  image: { v: { N: '2' } },
  deletedAtS: s(T0 + 2 * H + 300_000),
});
const o2 = removeRow({ table: 'orders', keys: { pk: { S: 'user#2' } }, deletedAtS: s(T0 + 1.5 * H) });
const a1 = removeRow({ table: 'orders', keys: { pk: { S: 'admin#1' } }, deletedAtS: s(T0 + 3 * H) });
const a1x = retractRow(a1, T0 + 5 * H);
// a table whose name is a prefix of the first, with dots; a numeric key; a composite key table
const other = removeRow({ table: 'orders.v2', keys: { pk: { S: 'user#1' } }, deletedAtS: s(T0 + 600_000) });
const num = removeRow({ table: 'nums', keys: { id: { N: '10' } }, deletedAtS: s(T0) });
const numOdd = removeRow({ table: 'nums', keys: { id: { N: '2.50' } }, deletedAtS: s(T0) });
const ev = removeRow({ table: 'events', keys: { pk: { S: 'dev-7' }, sk: { S: 'x-1' } }, deletedAtS: s(T0) });

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ttlstream-catalog-'));
  storage = new Recording(new FsArchiveStorage(dir));
  await writeRoll(storage, [o1a, other, num, numOdd, ev, o2], { partition: 0, first: 0n });
  await writeRoll(storage, [o1b, a1], { partition: 1, first: 100n });
  await writeRoll(storage, [a1x], { partition: 1, first: 102n });
  // a redo of partition 0 with a different range: the same o2 record in a second file
  await writeRoll(storage, [o2], { partition: 0, first: 5n });
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

beforeEach(() => {
  storage.listed = [];
  storage.read = [];
});

const ids = (rows: CatalogRow[]): string[] => rows.map((r) => `${r.kind}:${r.eventID}`).sort();

describe('catalog listFiles', () => {
  it('lists the data files of a table with their key index, and nothing of other tables', async () => {
    const files = await collect(openCatalog(storage).listFiles('orders'));
    expect(files.map((f) => f.path.split('/').slice(1, 3).join('/'))).toEqual([
      'date=2025-03-10/hour=22',
      'date=2025-03-10/hour=23',
      'date=2025-03-10/hour=23',
      'date=2025-03-11/hour=00',
      'date=2025-03-11/hour=01',
      'date=2025-03-11/hour=03',
    ]);
    expect(files.every((f) => f.indexPath === indexPathFor(f.path))).toBe(true);
    expect(files.every((f) => f.path.startsWith('table=orders/'))).toBe(true);
    expect(storage.read).toEqual([]); // listing only
  });

  it('prunes by date= and hour= segments: a short window lists only its hour directories', async () => {
    const files = await collect(
      openCatalog(storage).listFiles('orders', { fromMs: T0 + H, toMs: T0 + 2 * H }),
    );
    expect(files).toHaveLength(2);
    expect(files.every((f) => f.hourStartMs === T0 + H)).toBe(true);
    // The hour's folder and its twin under _index/, nothing more.
    expect(storage.listed).toEqual([
      'table=orders/date=2025-03-10/hour=23/',
      '_index/table=orders/date=2025-03-10/hour=23/',
    ]);
  });

  it('lists day directories for long windows and keeps only overlapping hours', async () => {
    const files = await collect(
      openCatalog(storage).listFiles('orders', { fromMs: T0 + 3 * H, toMs: T0 + 200 * H }),
    );
    // day 2025-03-11 is listed whole; its hour 00 lies before the window and is dropped
    expect(files.map((f) => f.hourStartMs)).toEqual([T0 + 3 * H, T0 + 5 * H]);
    expect(storage.listed.slice(0, 2)).toEqual([
      'table=orders/date=2025-03-11/',
      '_index/table=orders/date=2025-03-11/',
    ]);
    expect(storage.listed.every((p) => /^(_index\/)?table=orders\/date=/.test(p))).toBe(true);
  });

  it('reports a data file whose index was never written, and scan skips it', async () => {
    const [path] = await writeRoll(
      new (class extends Recording {
        override put(p: string, body: Buffer): Promise<void> {
          return p.endsWith('.avro') ? super.put(p, body) : Promise.resolve();
        }
      })(storage),
      [removeRow({ table: 'halfdone', keys: { pk: { S: 'a' } }, deletedAtS: s(T0) })],
    );
    const catalog = openCatalog(storage);
    expect(await collect(catalog.listFiles('halfdone'))).toEqual([
      expect.objectContaining({ path, indexPath: null }),
    ]);
    expect(await collect(catalog.scan('halfdone'))).toEqual([]);
  });
});

describe('catalog over an archive written before the _index/ layout', () => {
  it('finds a key index beside its data file, and prefers _index/ when both are there', async () => {
    const [older, newer] = await writeRoll(storage, [
      removeRow({ table: 'mixed', keys: { pk: { S: 'old' } }, deletedAtS: s(T0) }),
      removeRow({ table: 'mixed', keys: { pk: { S: 'new' } }, deletedAtS: s(T0 + H) }),
    ]);
    if (older === undefined || newer === undefined) throw new Error('expected two files');
    // The older file as a version before the layout change left it: its index beside it.
    const body = (await storage.get(indexPathFor(older))) as Buffer;
    await storage.put(besideIndexPathFor(older), body);
    await storage.delete(indexPathFor(older));
    const catalog = openCatalog(storage);
    expect((await collect(catalog.listFiles('mixed'))).map((f) => f.indexPath)).toEqual([
      besideIndexPathFor(older),
      indexPathFor(newer),
    ]);
    expect((await collect(catalog.scan('mixed'))).map((r) => JSON.parse(r.key))).toEqual([
      { pk: { S: 'old' } },
      { pk: { S: 'new' } },
    ]);
    // A move interrupted between its copy and its removal: both places hold it, _index/ is read.
    await storage.put(indexPathFor(older), body);
    expect((await collect(catalog.listFiles('mixed')))[0]?.indexPath).toBe(indexPathFor(older));
  });
});

describe('catalog scan', () => {
  it('reads key indexes only, never data files', async () => {
    const rows = await collect(openCatalog(storage).scan('orders'));
    expect(ids(rows)).toEqual(
      ids([o1a, o1b, o2, o2, a1, a1x].map((r) => ({ kind: r.kind, eventID: r.eventID }) as CatalogRow)),
    );
    expect(storage.read.length).toBeGreaterThan(0);
    expect(storage.read.every((p) => p.endsWith('.avro.idx.json'))).toBe(true);
  });

  it('filters by exact key, given as DynamoDB JSON or its string', async () => {
    const catalog = openCatalog(storage);
    const byObject = await collect(catalog.scan('orders', { key: { pk: { S: 'user#1' } } }));
    expect(ids(byObject)).toEqual([`remove:${o1a.eventID}`, `remove:${o1b.eventID}`].sort());
    const byString = await collect(catalog.scan('orders', { key: '{"pk":{"S":"user#1"}}' }));
    expect(ids(byString)).toEqual(ids(byObject));
    expect(byObject.every((r) => r.table === 'orders' && r.file.endsWith('.avro'))).toBe(true);
  });

  it('matches numeric keys whatever their spelling', async () => {
    const rows = await collect(openCatalog(storage).scan('nums', { key: { id: { N: '1.0e1' } } }));
    expect(rows.map((r) => r.eventID)).toEqual([num.eventID]);
    // and whatever spelling the archive holds
    const odd = await collect(openCatalog(storage).scan('nums', { key: { id: { N: '2.5' } } }));
    expect(odd.map((r) => r.eventID)).toEqual([numOdd.eventID]);
  });

  it('filters by hash-key prefix', async () => {
    const rows = await collect(openCatalog(storage).scan('orders', { keyPrefix: 'user#' }));
    expect(new Set(rows.map((r) => r.eventID))).toEqual(new Set([o1a.eventID, o1b.eventID, o2.eventID]));
    expect(await collect(openCatalog(storage).scan('orders', { keyPrefix: 'nobody' }))).toEqual([]);
  });

  it('needs the hash-key name for a prefix on a composite key, and uses it', async () => {
    const catalog = openCatalog(storage);
    await expect(collect(catalog.scan('events', { keyPrefix: 'dev-' }))).rejects.toThrow(/hashKey/);
    expect(await collect(catalog.scan('events', { keyPrefix: 'dev-', hashKey: 'pk' }))).toHaveLength(1);
    expect(await collect(catalog.scan('events', { keyPrefix: 'x-', hashKey: 'pk' }))).toHaveLength(0);
  });

  it('filters by deletion time, from inclusive and to exclusive', async () => {
    const catalog = openCatalog(storage);
    const at = o2.record?.dynamodb.ApproximateCreationDateTime as number;
    expect(await collect(catalog.scan('orders', { fromMs: at * 1000, toMs: at * 1000 + 1 }))).toHaveLength(2);
    expect(await collect(catalog.scan('orders', { fromMs: at * 1000 + 1, toMs: T0 + 2 * H }))).toHaveLength(
      0,
    );
    expect(await collect(catalog.scan('orders', { fromMs: T0, toMs: at * 1000 }))).toHaveLength(1);
  });

  it('refuses bad windows and keys with a ValidationError', async () => {
    const catalog = openCatalog(storage);
    await expect(collect(catalog.scan('orders', { fromMs: 10, toMs: 5 }))).rejects.toThrow(ValidationError);
    await expect(collect(catalog.scan('orders', { fromMs: -1 }))).rejects.toThrow(ValidationError);
    await expect(collect(catalog.scan('orders', { key: 'not json' }))).rejects.toThrow(ValidationError);
    await expect(collect(catalog.scan('orders', { key: { pk: 'plain' } as never }))).rejects.toThrow(
      /attribute value/,
    );
  });
});

describe('catalog versions and retractions', () => {
  it('findVersions returns each deletion once, oldest first', async () => {
    const versions = await openCatalog(storage).findVersions('orders', { pk: { S: 'user#1' } });
    expect(versions.map((v) => v.eventID)).toEqual([o1a.eventID, o1b.eventID]);
    expect(versions.every((v) => !v.retracted)).toBe(true);
    const twice = await openCatalog(storage).findVersions('orders', { pk: { S: 'user#2' } });
    expect(twice.map((v) => v.eventID)).toEqual([o2.eventID]); // two files, one deletion
  });

  it('marks a version retracted even when the retraction lies after the window', async () => {
    const versions = await openCatalog(storage).findVersions(
      'orders',
      { pk: { S: 'admin#1' } },
      { fromMs: T0 + 3 * H, toMs: T0 + 4 * H },
    );
    expect(versions).toEqual([expect.objectContaining({ eventID: a1.eventID, retracted: true })]);
  });

  it('retractedEventIDs looks from the window start to the end of the archive', async () => {
    const catalog = openCatalog(storage);
    expect(await catalog.retractedEventIDs('orders', { fromMs: T0 + 3 * H, toMs: T0 + 4 * H })).toEqual(
      new Set([a1.eventID]),
    );
    expect(await catalog.retractedEventIDs('orders', { fromMs: T0 + 6 * H })).toEqual(new Set());
    expect(await catalog.retractedEventIDs('orders.v2')).toEqual(new Set());
  });
});

describe('catalog and damaged key indexes', () => {
  it('names the file of an index that is not valid JSON or not an index', async () => {
    const [path = ''] = await writeRoll(storage, [
      removeRow({ table: 'damaged', keys: { pk: { S: 'a' } }, deletedAtS: s(T0) }),
    ]);
    await storage.put(indexPathFor(path), Buffer.from('{"file": 3'));
    await expect(collect(openCatalog(storage).scan('damaged'))).rejects.toThrow(/damaged.*not JSON/);
    await storage.put(indexPathFor(path), Buffer.from('{"file":"x"}'));
    await expect(collect(openCatalog(storage).scan('damaged'))).rejects.toThrow(ValidationError);
  });

  it('refuses an index that claims another table', async () => {
    const [path = ''] = await writeRoll(storage, [
      removeRow({ table: 'liar', keys: { pk: { S: 'a' } }, deletedAtS: s(T0) }),
    ]);
    const body = JSON.parse((await storage.get(indexPathFor(path)))?.toString() ?? '{}') as { table: string };
    body.table = 'orders';
    await storage.put(indexPathFor(path), Buffer.from(JSON.stringify(body)));
    await expect(collect(openCatalog(storage).scan('liar'))).rejects.toThrow(/indexes table orders/);
  });
});
