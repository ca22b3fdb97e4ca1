/**
 * The archive's storage contract, shared by the archiver (writer), the catalog, restore and replay.
 * Paths are relative to the archive root, '/'-separated, and every segment built from data went
 * through `safeSegment()`; implementations still refuse paths that could leave the root.
 */
export interface ArchiveStorage {
  /** A short name for metrics and logs: 'fs' or 's3'. */
  readonly kind: 'fs' | 's3';
  /** Human-readable root (the configured URL), for logs. */
  readonly root: string;
  /**
   * Write `body` at `path`, replacing any previous object. Durable when it resolves: the file
   * system writes a temporary file, fsyncs it, renames it into place and fsyncs the directory; S3
   * uses PutObject (or a multipart upload for large bodies), which is durable on success.
   */
  put(path: string, body: Buffer): Promise<void>;
  /** The object's bytes, or null when it does not exist. */
  get(path: string): Promise<Buffer | null>;
  /** Every path that starts with `prefix` (a plain string prefix, as S3), sorted lexicographically. */
  list(prefix: string): AsyncIterable<string>;
  /** Remove the object; removing a missing object is not an error. */
  delete(path: string): Promise<void>;
  /**
   * Write `body` at `path` only when no object is there, atomically against every other writer: true when written,
   * false when one was there. A file system links the durably written file into place (link(2) refuses an existing
   * name); S3 is asked with `If-None-Match: *`. The archive's locks rest on it (docs/decisions/0037).
   */
  putIfAbsent(path: string, body: Buffer): Promise<boolean>;
  /**
   * Move the object at `from` to `to`, replacing what is there, durably when it resolves: one rename on a file
   * system; CopyObject then DeleteObject on S3 (a crash between the two leaves both, the same bytes). `from`
   * missing is an error. A compaction moves its files into place with it (docs/decisions/0037).
   */
  move(from: string, to: string): Promise<void>;
}
