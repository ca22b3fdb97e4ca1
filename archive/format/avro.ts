import { ValidationError } from '../../core/errors';
import {
  archivedRecordType,
  fromAvroArchived,
  toAvroArchived,
  type ArchivedRecord,
  type AvroArchivedRecord,
} from '../../schemas';
import { ContainerWriter, checkContainerFraming, decodeContainer } from './avro-container';
import { rowBytesRoom, writeRowBytes, type RowBytes } from '../rows';
import type { DataFileContext, DataFileFormat, DataFileWriter, KeptRows } from './types';

/**
 * Uncompressed bytes per container block of a data file. Larger than avsc's 64 KiB: each block is
 * one deflate call on the libuv pool, whose fixed cost (a zlib stream per call, on the main thread)
 * dominated rolls of small blocks. Readers do not care (restore reads whole files).
 */
export const DATA_BLOCK_BYTES = 1024 * 1024;

/**
 * A whole Avro data file's rows as stored (older row schemas resolved to the current one). avsc's block decoder stops
 * quietly at a cut-off block, so the framing is checked first and the rows counted against it.
 */
export async function decodeAvroRows(file: Buffer, path: string): Promise<AvroArchivedRecord[]> {
  const { rows: framed } = checkContainerFraming(file, path);
  let decoded;
  try {
    decoded = await decodeContainer<AvroArchivedRecord>(file, { readerSchema: archivedRecordType });
  } catch (err) {
    throw new ValidationError(`${path}: ${(err as Error).message}`, { cause: err });
  }
  if (decoded.rows.length !== framed)
    throw new ValidationError(`${path}: decoded ${decoded.rows.length} rows where the blocks hold ${framed}`);
  return decoded.rows;
}

/** Decode a whole Avro data file into validated archive rows. */
export async function decodeAvroFile(file: Buffer, path: string): Promise<ArchivedRecord[]> {
  return (await decodeAvroRows(file, path)).map((row, n) => {
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

/** Avro object container files of archive rows, deflated (archive/format/avro-container.ts). */
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
