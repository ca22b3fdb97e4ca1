import { createHash } from 'node:crypto';
import { ValidationError } from '../../core/errors';

/**
 * Characters left as they are in a path segment. Everything else is percent-encoded from its UTF-8
 * bytes, including '.', '/', '\\', NUL, '%', '=', '+' and '~': so a segment can never be '.' or
 * '..', never contains a separator, never collides with the '+' / '=' / '-' punctuation of the
 * layout, and two different names never share an encoding.
 */
const PLAIN = /^[A-Za-z0-9_-]$/;

/**
 * File systems limit a name to 255 bytes and a data file name adds about 70 characters to the
 * topic segment, so longer encodings are cut and suffixed with '~' and a hash of the full name.
 * '~' never appears in a plain encoding, so a shortened name cannot equal an unshortened one.
 */
export const MAX_SEGMENT_LENGTH = 150;
const KEEP_WHEN_SHORTENED = MAX_SEGMENT_LENGTH - 33;

/** Encode a data-derived name (table, topic) as one path segment that cannot escape the root. */
export function safeSegment(name: string): string {
  if (typeof name !== 'string' || name.length === 0) {
    throw new ValidationError('a path segment must be a non-empty string');
  }
  let out = '';
  for (const byte of Buffer.from(name, 'utf8')) {
    const ch = String.fromCharCode(byte);
    out += byte < 0x80 && PLAIN.test(ch) ? ch : '%' + byte.toString(16).toUpperCase().padStart(2, '0');
  }
  if (out.length <= MAX_SEGMENT_LENGTH) return out;
  let cut = KEEP_WHEN_SHORTENED;
  // Do not cut through a %XX escape.
  const lastPercent = out.lastIndexOf('%', cut - 1);
  if (lastPercent >= 0 && lastPercent > cut - 3) cut = lastPercent;
  const digest = createHash('sha256').update(name, 'utf8').digest('hex').slice(0, 32);
  return `${out.slice(0, cut)}~${digest}`;
}

/** The name a segment was made from; null for shortened segments, whose tail is a hash. */
export function decodeSegment(segment: string): string | null {
  if (segment.includes('~')) return null;
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/**
 * Refuse a storage path that is not a clean relative path: empty, absolute, with an empty, '.' or
 * '..' segment, or containing '\\' or NUL. Storage implementations call this on every path.
 */
export function assertSafePath(path: string, what = 'path'): void {
  if (typeof path !== 'string' || path.length === 0) throw new ValidationError(`${what} must be non-empty`);
  if (path.includes('\\') || path.includes('\0'))
    throw new ValidationError(`${what} contains '\\' or NUL: ${JSON.stringify(path)}`);
  for (const seg of path.split('/')) {
    if (seg === '' || seg === '.' || seg === '..') {
      throw new ValidationError(`${what} is not a clean relative path: ${JSON.stringify(path)}`);
    }
  }
}

/** A list prefix may end with '/' or be empty; otherwise the same rules as a path. */
export function assertSafePrefix(prefix: string): void {
  if (prefix === '') return;
  assertSafePath(prefix.endsWith('/') ? prefix.slice(0, -1) : prefix, 'prefix');
}
