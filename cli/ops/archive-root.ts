import { HeadBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import type { TtlstreamConfig } from '../../core/config';
import { ValidationError } from '../../core/errors';
import { explainServiceError, ServiceError } from '../service-errors';

/** What HeadBucket's failure means for the archive root: absent, refused, or something else (rethrown). */
export type HeadBucketVerdict = 'missing' | 'forbidden' | 'other';

/** HeadBucket has no body, so S3 answers 404 (NotFound, or NoSuchBucket from some servers) or 403 by status alone. */
export function headBucketVerdict(err: unknown): HeadBucketVerdict {
  const e = err as { name?: string; Code?: string; $metadata?: { httpStatusCode?: number } } | null;
  const status = e?.$metadata?.httpStatusCode;
  if (e?.name === 'NotFound' || e?.name === 'NoSuchBucket' || e?.Code === 'NoSuchBucket' || status === 404)
    return 'missing';
  if (e?.name === 'Forbidden' || e?.name === 'AccessDenied' || status === 403) return 'forbidden';
  return 'other';
}

const ARCHIVE_SETTING = 'archive.url / TTLSTREAM_ARCHIVE_URL';

function endpointOf(config: TtlstreamConfig): string {
  return config.archive.s3Endpoint ?? `AWS default for ${config.region}`;
}

/**
 * Refuses an S3 archive whose bucket is not there (or not ours to read), as a missing folder is refused
 * for a file archive: a mistyped bucket must not read as an empty archive. An unreachable endpoint is
 * named with its setting (service-errors.ts).
 */
export async function assertS3BucketExists(
  s3: S3Client,
  bucket: string,
  config: TtlstreamConfig,
): Promise<void> {
  try {
    await s3.send(new HeadBucketCommand({ Bucket: bucket }));
  } catch (err) {
    const verdict = headBucketVerdict(err);
    if (verdict === 'missing') {
      throw new ValidationError(
        `archive bucket ${bucket} does not exist at S3 endpoint ${endpointOf(config)} (--archive, or ${ARCHIVE_SETTING})`,
      );
    }
    if (verdict === 'forbidden') {
      throw new ServiceError(
        `archive bucket ${bucket} at S3 endpoint ${endpointOf(config)}: access denied (HTTP 403): check the bucket name (--archive, or ${ARCHIVE_SETTING}) and the credentials (archive.s3AccessKeyId / TTLSTREAM_ARCHIVE_S3_ACCESS_KEY_ID, else the SDK default chain)`,
        { cause: err },
      );
    }
    throw explainServiceError(err, config) ?? err;
  }
}

/** A file archive's root must be an existing folder. */
export async function assertFolderExists(root: string): Promise<void> {
  const { stat } = await import('node:fs/promises');
  const info = await stat(root).catch(() => undefined);
  if (!info?.isDirectory()) {
    throw new ValidationError(
      `archive root ${root} does not exist or is not a folder (--archive, or ${ARCHIVE_SETTING})`,
    );
  }
}
