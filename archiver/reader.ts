import { ValidationError } from '../core/errors';
import type { ArchivedRecord } from '../schemas';
import { decodeDataFile } from './format';
import type { ArchiveStorage } from './storage';

/**
 * Reading archive data files of either format (archiver/format/): the format goes by the file's
 * extension. A damaged file is an error naming it, never a silently shorter list of records.
 */

/** Every row of one data file, validated against the contract. */
export function decodeArchiveFile(file: Buffer, path: string): Promise<ArchivedRecord[]> {
  return decodeDataFile(file, path);
}

/** The rows of one data file of the archive. */
export async function readArchiveFile(storage: ArchiveStorage, path: string): Promise<ArchivedRecord[]> {
  const body = await storage.get(path);
  if (body === null)
    throw new ValidationError(`${path}: data file is missing from the archive at ${storage.root}`);
  return decodeArchiveFile(body, path);
}

/**
 * The REMOVE rows of one file with the given eventIDs (the catalog's row numbers are a hint; the
 * eventID is what is checked, so a stale index can never hand back another item's record).
 */
export async function readRemoves(
  storage: ArchiveStorage,
  path: string,
  eventIDs: Iterable<string>,
): Promise<Map<string, ArchivedRecord>> {
  const wanted = new Set(eventIDs);
  const out = new Map<string, ArchivedRecord>();
  for (const row of await readArchiveFile(storage, path)) {
    if (row.kind === 'remove' && wanted.has(row.eventID)) out.set(row.eventID, row);
  }
  return out;
}
