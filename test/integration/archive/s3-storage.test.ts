import { randomBytes } from 'node:crypto';
import { MULTIPART_THRESHOLD, S3ArchiveStorage, safeSegment } from '../../../archive/storage';
import { ValidationError } from '../../../core/errors';
import { createS3Client } from '../../../core/clients';
import { createTestBucket, testConfig, uniqueName } from '../../support/stack';
import { collect } from '../../support/archive-fixture';

describe('S3ArchiveStorage against the S3 server', () => {
  const s3 = createS3Client(testConfig());

  it('puts (single and multipart), gets, lists in order under its prefix and deletes', async () => {
    const bucket = await createTestBucket(s3, uniqueName('arch-s3st'));
    const storage = new S3ArchiveStorage(s3, bucket, '/deep/prefix/');
    const other = new S3ArchiveStorage(s3, bucket, 'deep/prefix-other');
    await other.put('a/x', Buffer.from('not ours'));

    expect(await storage.get('a/missing')).toBeNull();
    const big = randomBytes(MULTIPART_THRESHOLD + 3 * 1024 * 1024);
    await storage.put('a/big.avro', big);
    expect((await storage.get('a/big.avro'))?.equals(big)).toBe(true);

    const paths = ['a/b', 'a.x', 'a/c/d', 'a-z', 'a/b.idx.json', 'b', `table=${safeSegment('../x')}/f`];
    for (const p of paths) await storage.put(p, Buffer.from(p));
    await storage.put('a/b', Buffer.from('replaced'));
    expect((await storage.get('a/b'))?.toString()).toBe('replaced');
    const all = [...paths, 'a/big.avro'].sort();
    expect(await collect(storage.list(''))).toEqual(all);
    expect(await collect(storage.list('a/'))).toEqual(all.filter((p) => p.startsWith('a/')));
    expect(await collect(other.list(''))).toEqual(['a/x']);

    await storage.delete('a/big.avro');
    await storage.delete('a/never-there');
    expect(await storage.get('a/big.avro')).toBeNull();
    await expect(storage.put('../escape', Buffer.from('x'))).rejects.toThrow(ValidationError);
  });

  it('lists past one page of keys', async () => {
    const bucket = await createTestBucket(s3, uniqueName('arch-s3pg'));
    const storage = new S3ArchiveStorage(s3, bucket, 'p');
    const names = Array.from({ length: 1100 }, (_, i) => `m/${String(i).padStart(5, '0')}`);
    for (let i = 0; i < names.length; i += 50) {
      await Promise.all(names.slice(i, i + 50).map((n) => storage.put(n, Buffer.from('1'))));
    }
    expect(await collect(storage.list('m/'))).toEqual(names);
  });
});
