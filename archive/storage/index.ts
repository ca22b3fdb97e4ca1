import type { S3Client } from '@aws-sdk/client-s3';
import { createS3Client } from '../../core/clients';
import type { ArchiveSettings } from '../../core/config';
import { FsArchiveStorage } from './fs';
import { S3ArchiveStorage } from './s3';
import type { ArchiveStorage } from './types';
import { parseArchiveUrl } from './url';

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
export { parseArchiveUrl } from './url';

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
export {
  readKeyIndex,
  deleteKeyIndex,
  listWithIndexes,
  type StoredKeyIndex,
  type AreaPath,
} from './key-index';
