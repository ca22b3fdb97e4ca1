import avro from 'avsc';
import { ValidationError } from '../core/errors';
import {
  archivedRecordType,
  fromAvroArchived,
  type ArchivedRecord,
  type AvroArchivedRecord,
} from '../schemas';
import { decodeContainer } from './container';
import type { ArchiveStorage } from './storage';

/**
 * Reading archive data files (Avro object containers of archive rows). avsc's block decoder stops
 * quietly at a cut-off block, so the framing is checked first: a truncated or padded file is an
 * error naming the file, never a silently shorter list of records.
 */

const HEADER_TYPE = avro.Type.forSchema({
  type: 'record',
  name: 'org.apache.avro.file.Header',
  fields: [
    { name: 'magic', type: { type: 'fixed', name: 'Magic', size: 4 } },
    { name: 'meta', type: { type: 'map', values: 'bytes' } },
    { name: 'sync', type: { type: 'fixed', name: 'Sync', size: 16 } },
  ],
});
const LONG = avro.Type.forSchema('long');
const MAGIC = Buffer.from('Obj\x01', 'latin1');

/** Rows and blocks of a container file whose framing is whole; throws ValidationError otherwise. */
export function checkContainerFraming(file: Buffer, path: string): { rows: number; blocks: number } {
  if (file.length < 4 || !file.subarray(0, 4).equals(MAGIC))
    throw new ValidationError(`${path}: not an Avro container file`);
  const header = HEADER_TYPE.decode(file, 0) as { value?: { sync: Buffer }; offset: number };
  if (header.offset < 0 || !header.value) throw new ValidationError(`${path}: truncated Avro header`);
  const sync = header.value.sync;
  let pos = header.offset;
  let rows = 0;
  let blocks = 0;
  while (pos < file.length) {
    const count = LONG.decode(file, pos) as { value?: number; offset: number };
    const size =
      count.offset < 0 ? count : (LONG.decode(file, count.offset) as { value?: number; offset: number });
    if (count.offset < 0 || size.offset < 0 || count.value === undefined || size.value === undefined)
      throw new ValidationError(`${path}: truncated after block ${blocks}`);
    if (count.value < 0 || size.value < 0) throw new ValidationError(`${path}: corrupt block ${blocks}`);
    const end = size.offset + size.value;
    if (end + 16 > file.length) throw new ValidationError(`${path}: truncated in block ${blocks}`);
    if (!file.subarray(end, end + 16).equals(sync))
      throw new ValidationError(`${path}: bad sync marker after block ${blocks}`);
    rows += count.value;
    blocks += 1;
    pos = end + 16;
  }
  return { rows, blocks };
}

/** Decode a whole archive data file into validated archive rows (older row schemas resolve to the current one). */
export async function decodeArchiveFile(file: Buffer, path: string): Promise<ArchivedRecord[]> {
  const { rows: framed } = checkContainerFraming(file, path);
  let decoded;
  try {
    decoded = await decodeContainer<AvroArchivedRecord>(file, { readerSchema: archivedRecordType });
  } catch (err) {
    throw new ValidationError(`${path}: ${(err as Error).message}`, { cause: err });
  }
  if (decoded.rows.length !== framed)
    throw new ValidationError(`${path}: decoded ${decoded.rows.length} rows where the blocks hold ${framed}`);
  return decoded.rows.map((row, n) => {
    try {
      return fromAvroArchived(row);
    } catch (err) {
      throw new ValidationError(`${path} row ${n}: ${(err as Error).message}`, { cause: err });
    }
  });
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
