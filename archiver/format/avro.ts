import avro from 'avsc';
import { ValidationError } from '../../core/errors';
import {
  archivedRecordType,
  fromAvroArchived,
  toAvroArchived,
  type ArchivedRecord,
  type AvroArchivedRecord,
} from '../../schemas';
import { ContainerWriter, decodeContainer } from '../container';
import { rowBytesRoom, writeRowBytes, type RowBytes } from '../roll';
import type { DataFileContext, DataFileFormat, DataFileWriter, KeptRows } from './types';

/**
 * Uncompressed bytes per container block of a data file. Larger than avsc's 64 KiB: each block is
 * one deflate call on the libuv pool, whose fixed cost (a zlib stream per call, on the main thread)
 * dominated rolls of small blocks. Readers do not care (restore reads whole files).
 */
export const DATA_BLOCK_BYTES = 1024 * 1024;

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

/**
 * Decode a whole Avro data file into validated archive rows (older row schemas resolve to the
 * current one). avsc's block decoder stops quietly at a cut-off block, so the framing is checked
 * first.
 */
export async function decodeAvroFile(file: Buffer, path: string): Promise<ArchivedRecord[]> {
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

function newContainer(): ContainerWriter {
  return new ContainerWriter(archivedRecordType, { codec: 'deflate', blockBytes: DATA_BLOCK_BYTES });
}

/** Avro object container files of archive rows, deflated (archiver/container.ts). */
class AvroFileWriter implements DataFileWriter {
  private readonly writer = newContainer();

  add(row: RowBytes): void {
    this.writer.appendWith(rowBytesRoom(row), row, writeRowBytes);
  }

  get rowCount(): number {
    return this.writer.rowCount;
  }

  get rawBytes(): number {
    return this.writer.rawBytes;
  }

  finish(context: DataFileContext): Promise<Buffer> {
    return this.writer.finish(context.deflateLevel);
  }
}

/** The kept rows' Avro values copied into a new container (nothing decoded into the contract's shape). */
async function keepAvroRows(body: Buffer, path: string, keep: number[]): Promise<KeptRows> {
  const { rows: framed } = checkContainerFraming(body, path);
  let decoded;
  try {
    decoded = await decodeContainer<AvroArchivedRecord>(body, { readerSchema: archivedRecordType });
  } catch (err) {
    throw new ValidationError(`${path}: ${(err as Error).message}`, { cause: err });
  }
  if (decoded.rows.length !== framed)
    throw new ValidationError(`${path}: decoded ${decoded.rows.length} rows where the blocks hold ${framed}`);
  const writer = newContainer();
  const eventIDs: string[] = [];
  for (const n of keep) {
    const row = decoded.rows[n];
    if (!row) throw new ValidationError(`${path}: no row ${n}`);
    writer.append(row);
    eventIDs.push(row.eventID);
  }
  return { data: await writer.finish(), total: framed, eventIDs };
}

export const avroFormat: DataFileFormat = {
  name: 'avro',
  newWriter: () => new AvroFileWriter(),
  decode: decodeAvroFile,
  encode: async (rows: ArchivedRecord[]) => {
    const writer = newContainer();
    for (const row of rows) writer.append(toAvroArchived(row));
    return writer.finish();
  },
  keepRows: keepAvroRows,
};
