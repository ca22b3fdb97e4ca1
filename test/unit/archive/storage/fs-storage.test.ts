import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../../../core/config';
import { ConfigError } from '../../../../core/errors';
import {
  FsArchiveStorage,
  S3ArchiveStorage,
  openArchiveStorage,
  parseArchiveUrl,
} from '../../../../archive/storage';
import { collect } from '../../../support/archive-fixture';

describe('FsArchiveStorage', () => {
  let dir: string;
  let storage: FsArchiveStorage;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ttlstream-fs-'));
    storage = new FsArchiveStorage(join(dir, 'archive'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('puts, replaces, gets and deletes', async () => {
    expect(await storage.get('a/b.avro')).toBeNull();
    await storage.put('a/b.avro', Buffer.from('one'));
    expect((await storage.get('a/b.avro'))?.toString()).toBe('one');
    await storage.put('a/b.avro', Buffer.from('two'));
    expect((await storage.get('a/b.avro'))?.toString()).toBe('two');
    await storage.delete('a/b.avro');
    expect(await storage.get('a/b.avro')).toBeNull();
    await expect(storage.delete('a/b.avro')).resolves.toBeUndefined();
    // No temporary files are left behind.
    expect(readdirSync(join(dir, 'archive', 'a'))).toEqual([]);
  });

  it('lists by string prefix in lexicographic order across directories', async () => {
    const paths = ['a/b', 'a.x', 'a/c/d', 'a-z', 'a/b.idx.json', 'b', 'a/c.e', '_manifest/t/0/1.json'];
    for (const p of paths) await storage.put(p, Buffer.from(p));
    const sorted = [...paths].sort();
    expect(await collect(storage.list(''))).toEqual(sorted);
    expect(await collect(storage.list('a/'))).toEqual(sorted.filter((p) => p.startsWith('a/')));
    expect(await collect(storage.list('a/c'))).toEqual(['a/c.e', 'a/c/d']);
    expect(await collect(storage.list('a/b'))).toEqual(['a/b', 'a/b.idx.json']);
    expect(await collect(storage.list('nothing/'))).toEqual([]);
    expect(await collect(storage.list('a/b/'))).toEqual([]);
  });

  it('lists nothing for a root that does not exist yet', async () => {
    expect(await collect(new FsArchiveStorage(join(dir, 'missing')).list(''))).toEqual([]);
  });
});

describe('openArchiveStorage', () => {
  it('opens a file archive from a file URL', () => {
    const s = openArchiveStorage(parseConfig({ archive: { url: 'file:///tmp/some-archive/' } }));
    expect(s).toBeInstanceOf(FsArchiveStorage);
    expect(s.root).toBe('file:///tmp/some-archive');
  });

  it('opens an S3 archive with bucket and prefix', () => {
    const s = openArchiveStorage(
      parseConfig({ archive: { url: 's3://bucket/pre/fix/', s3Endpoint: 'http://127.0.0.1:1' } }),
    );
    expect(s).toBeInstanceOf(S3ArchiveStorage);
    expect(s.root).toBe('s3://bucket/pre/fix/');
    expect(parseArchiveUrl('s3://bucket')).toEqual({ kind: 's3', bucket: 'bucket', prefix: '' });
  });

  it('refuses a URL that is neither', () => {
    expect(() => parseArchiveUrl('http://x/y')).toThrow(ConfigError);
    expect(() => parseArchiveUrl('file://host/x')).toThrow(ConfigError);
  });
});
