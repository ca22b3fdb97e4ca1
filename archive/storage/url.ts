import { isAbsolute } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../../core/errors';

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
