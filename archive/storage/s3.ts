import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  NoSuchKey,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { S3SseMode } from '../../core/config-schema';
import type { ArchiveStorage } from './types';
import { assertSafePath, assertSafePrefix } from './safe-segment';

/** Bodies above this go through a multipart upload (parts of this size), below it one PutObject. */
export const MULTIPART_THRESHOLD = 16 * 1024 * 1024;

/** S3's answer to a conditional write that lost: 412 (the object exists) or 409 (a concurrent one is in flight). */
function isConditionLost(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } } | null;
  const status = e?.$metadata?.httpStatusCode;
  return e?.name === 'PreconditionFailed' || status === 412 || status === 409;
}

function isMissing(err: unknown): boolean {
  if (err instanceof NoSuchKey) return true;
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } } | null;
  return e?.name === 'NoSuchKey' || e?.name === 'NotFound' || e?.$metadata?.httpStatusCode === 404;
}

/** Server-side encryption asked for on every object written (archive.s3Sse, archive.s3KmsKeyId). */
export interface S3Encryption {
  sse: S3SseMode;
  kmsKeyId?: string;
}

/** The PutObject / CreateMultipartUpload fields that ask S3 for `encryption` (none: the bucket's default). */
export function encryptionParams(encryption: S3Encryption | undefined): {
  ServerSideEncryption?: S3SseMode;
  SSEKMSKeyId?: string;
} {
  if (!encryption) return {};
  return {
    ServerSideEncryption: encryption.sse,
    ...(encryption.sse === 'aws:kms' && encryption.kmsKeyId ? { SSEKMSKeyId: encryption.kmsKeyId } : {}),
  };
}

/** An archive under `s3://bucket/prefix`. */
export class S3ArchiveStorage implements ArchiveStorage {
  readonly kind = 's3' as const;
  readonly root: string;
  private readonly prefix: string;

  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    prefix: string,
    private readonly encryption?: S3Encryption,
  ) {
    const trimmed = prefix.replace(/^\/+|\/+$/g, '');
    this.prefix = trimmed === '' ? '' : `${trimmed}/`;
    this.root = `s3://${bucket}/${this.prefix}`;
  }

  private key(path: string): string {
    assertSafePath(path);
    return this.prefix + path;
  }

  async put(path: string, body: Buffer): Promise<void> {
    const Key = this.key(path);
    if (body.length <= MULTIPART_THRESHOLD) {
      await this.s3.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key,
          Body: body,
          ContentLength: body.length,
          ...encryptionParams(this.encryption),
        }),
      );
      return;
    }
    const upload = new Upload({
      client: this.s3,
      // The Upload passes these on to CreateMultipartUpload, which is where S3 takes a multipart object's encryption.
      params: { Bucket: this.bucket, Key, Body: body, ...encryptionParams(this.encryption) },
      partSize: MULTIPART_THRESHOLD,
      queueSize: 4,
      leavePartsOnError: false,
    });
    await upload.done();
  }

  async putIfAbsent(path: string, body: Buffer): Promise<boolean> {
    try {
      await this.s3.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: this.key(path),
          Body: body,
          ContentLength: body.length,
          IfNoneMatch: '*',
          ...encryptionParams(this.encryption),
        }),
      );
      return true;
    } catch (err) {
      if (isConditionLost(err)) return false;
      throw err;
    }
  }

  async move(from: string, to: string): Promise<void> {
    const source = this.key(from);
    // CopySource is `bucket/key`, URL-encoded (safe paths hold '%', '+' and '=').
    const copySource = `${this.bucket}/${source.split('/').map(encodeURIComponent).join('/')}`;
    await this.s3.send(
      new CopyObjectCommand({
        Bucket: this.bucket,
        Key: this.key(to),
        CopySource: copySource,
        ...encryptionParams(this.encryption),
      }),
    );
    await this.s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: source }));
  }

  async get(path: string): Promise<Buffer | null> {
    try {
      const out = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.key(path) }));
      if (!out.Body) return Buffer.alloc(0);
      return Buffer.from(await out.Body.transformToByteArray());
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  async *list(prefix: string): AsyncIterable<string> {
    assertSafePrefix(prefix);
    let ContinuationToken: string | undefined;
    do {
      const out = await this.s3.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix + prefix, ContinuationToken }),
      );
      // S3 returns keys in UTF-8 byte order; safe paths are ASCII, so that is lexicographic order.
      for (const obj of out.Contents ?? []) {
        if (obj.Key !== undefined) yield obj.Key.slice(this.prefix.length);
      }
      ContinuationToken = out.IsTruncated ? out.NextContinuationToken : undefined;
    } while (ContinuationToken);
  }

  async delete(path: string): Promise<void> {
    await this.s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.key(path) }));
  }
}
