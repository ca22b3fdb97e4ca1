import type { S3Client } from '@aws-sdk/client-s3';
import type { TimeRange } from '../../archive/catalog';
import { FsArchiveStorage } from '../../archive/storage/fs';
import type { ArchiveStorage } from '../../archive/storage/types';
import { parseArchiveUrl } from '../../archive/storage/url';
import type { TtlstreamConfig } from '../../core/config';
import { ValidationError } from '../../core/errors';
import type { CliContext } from './context';
import { explainServiceError, ServiceError } from './service-errors';

/**
 * The archive a reading command works on, and its window. Light on purpose: a command over a file archive loads
 * neither the S3 client nor the archive's readers (`archive query` starts in a fraction of a second).
 */

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
  const { HeadBucketCommand } = await import('@aws-sdk/client-s3');
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

/**
 * The archive a reading command (restore, replay, archive ls/show/query) works on. A file archive whose
 * root does not exist is refused, and so is an S3 archive whose bucket does not exist (or is denied): a
 * mistyped --archive used to read as an empty archive, "0 records".
 */
export async function openExistingStorage(ctx: CliContext): Promise<ArchiveStorage> {
  const parsed = parseArchiveUrl(ctx.config.archive.url);
  if (parsed.kind === 'fs') {
    await assertFolderExists(parsed.dir);
    return new FsArchiveStorage(parsed.dir);
  }
  await assertS3BucketExists(ctx.s3, parsed.bucket, ctx.config);
  const { openArchiveStorage } = await import('../../archive/storage');
  return openArchiveStorage(ctx.config, ctx.s3);
}

/** The window of `--from`/`--to` (or `--since`/`--until`), refused when it ends before it starts. */
export function rangeOf(opts: { from?: number; to?: number }): TimeRange | undefined {
  if (opts.from !== undefined && opts.to !== undefined && opts.from > opts.to) {
    throw new ValidationError('--from is after --to');
  }
  if (opts.from === undefined && opts.to === undefined) return undefined;
  return {
    ...(opts.from !== undefined ? { fromMs: opts.from } : {}),
    ...(opts.to !== undefined ? { toMs: opts.to } : {}),
  };
}
