import { createHash, randomBytes } from 'node:crypto';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { createS3Client } from '../../../core/clients';
import { createTestBucket, testConfig, uniqueName } from '../../support/stack';

const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

/** The S3 calls the archiver and restore rely on, against the real (moto) S3 HTTP API. */
describe('smoke: S3', () => {
  const s3 = createS3Client(testConfig());
  let bucket: string;

  beforeAll(async () => {
    bucket = await createTestBucket(s3, uniqueName('smoke-s3'));
  });

  afterAll(() => {
    s3.destroy();
  });

  it('puts, gets and lists objects under a prefix, page by page', async () => {
    const keys = Array.from(
      { length: 7 },
      (_, i) => `archive/t1/2026/11/30/part-${String(i).padStart(3, '0')}.avro`,
    );
    for (const [i, key] of keys.entries()) {
      await s3.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: `body-${i}`,
          Metadata: { records: String(i) },
        }),
      );
    }
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'archive/t2/other.avro', Body: 'x' }));

    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: keys[3] }));
    expect(await got.Body!.transformToString()).toBe('body-3');
    expect(got.Metadata).toEqual({ records: '3' });

    const listed: string[] = [];
    let token: string | undefined;
    do {
      const page = await s3.send(
        new ListObjectsV2Command({
          Bucket: bucket,
          Prefix: 'archive/t1/',
          MaxKeys: 3,
          ContinuationToken: token,
        }),
      );
      listed.push(...(page.Contents ?? []).map((o) => o.Key!));
      token = page.NextContinuationToken;
    } while (token);
    expect(listed).toEqual(keys); // lexicographic order, the other table's key excluded

    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: keys[0] }));
    await expect(s3.send(new HeadObjectCommand({ Bucket: bucket, Key: keys[0] }))).rejects.toMatchObject({
      name: 'NotFound',
    });
  });

  it('uploads a 12 MiB object in parts with lib-storage Upload and reads back the same bytes', async () => {
    const body = randomBytes(12 * 1024 * 1024);
    const upload = new Upload({
      client: s3,
      params: { Bucket: bucket, Key: 'big/file.avro', Body: body, ContentType: 'application/avro' },
      partSize: 5 * 1024 * 1024,
      queueSize: 2,
      leavePartsOnError: false,
    });
    const parts: number[] = [];
    upload.on('httpUploadProgress', (p) => {
      if (p.part !== undefined) parts.push(p.part);
    });
    await upload.done();

    expect(new Set(parts)).toEqual(new Set([1, 2, 3]));
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'big/file.avro' }));
    expect(head.ContentLength).toBe(body.length);
    expect(head.ETag).toMatch(/-3"$/); // a multipart ETag names its part count
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'big/file.avro' }));
    expect(sha256(await got.Body!.transformToByteArray())).toBe(sha256(body));
  });
});
