import type { S3Client } from '@aws-sdk/client-s3';
import { isAbsolute } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createS3Client } from '../../core/clients';
import type { ArchiveSettings } from '../../core/config';
import { ConfigError } from '../../core/errors';
import { FsArchiveStorage } from './fs';
import { S3ArchiveStorage } from './s3';
import type { ArchiveStorage } from './types';

export type { ArchiveStorage } from './types';
export { FsArchiveStorage } from './fs';
export { S3ArchiveStorage, MULTIPART_THRESHOLD, encryptionParams, type S3Encryption } from './s3';
export {
  safeSegment,
  decodeSegment,
  assertSafePath,
  assertSafePrefix,
  MAX_SEGMENT_LENGTH,
} from './safe-segment';
export * from './layout';

/** Parse an archive URL: `file:///abs/path` or `s3://bucket/prefix`. */
export function parseArchiveUrl(
  url: string,
): { kind: 'fs'; dir: string } | { kind: 's3'; bucket: string; prefix: string } {
  if (url.startsWith('file://')) {
    let dir: string;
    try {
      dir = fileURLToPath(url);
    } catch (err) {
      throw new ConfigError(`archive.url (TTLSTREAM_ARCHIVE_URL): ${(err as Error).message}`);
    }
    if (!isAbsolute(dir))
      throw new ConfigError('archive.url (TTLSTREAM_ARCHIVE_URL): expected an absolute path');
    return { kind: 'fs', dir: dir.length > 1 ? dir.replace(/[\\/]+$/, '') : dir };
  }
  const m = /^s3:\/\/([^/]+)\/?(.*)$/.exec(url);
  if (m) return { kind: 's3', bucket: m[1] as string, prefix: m[2] ?? '' };
  throw new ConfigError('archive.url (TTLSTREAM_ARCHIVE_URL): expected file:///path or s3://bucket/prefix');
}

/** What the archive's storage reads of the configuration (a whole configuration is one). */
export interface ArchiveStorageInput {
  region: string;
  archive: ArchiveSettings;
}

/** The archive named by `config.archive.url`. Pass an S3 client to share one; else one is built from config. */
export function openArchiveStorage(config: ArchiveStorageInput, s3?: S3Client): ArchiveStorage {
  const parsed = parseArchiveUrl(config.archive.url);
  if (parsed.kind === 'fs') return new FsArchiveStorage(parsed.dir);
  const { s3Sse, s3KmsKeyId } = config.archive;
  return new S3ArchiveStorage(
    s3 ?? createS3Client(config),
    parsed.bucket,
    parsed.prefix,
    s3Sse ? { sse: s3Sse, ...(s3KmsKeyId ? { kmsKeyId: s3KmsKeyId } : {}) } : undefined,
  );
}
