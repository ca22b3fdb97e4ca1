import { Readable } from 'node:stream';
import {
  archivedPrefix,
  createArchiveDecoder,
  fromAvroArchived,
  toLambdaJson,
  toRetractionJson,
  type ArchivedRecord,
  type AvroArchivedRecord,
} from '../../schemas';

/** Every row of one archive data file (Avro object container), validated against the contract. */
export async function readArchiveFile(body: Buffer): Promise<ArchivedRecord[]> {
  const rows: ArchivedRecord[] = [];
  await new Promise<void>((resolve, reject) => {
    const decoder = createArchiveDecoder();
    decoder.on('data', (row: AvroArchivedRecord) => {
      try {
        rows.push(fromAvroArchived(row));
      } catch (err) {
        decoder.destroy(err as Error);
      }
    });
    decoder.on('error', reject);
    decoder.on('end', () => resolve());
    Readable.from([body]).on('error', reject).pipe(decoder);
  });
  return rows;
}

/** The JSON form of an archived row: the record exactly as Lambda would get it (binary as base64). */
export function archivedToJson(row: ArchivedRecord): unknown {
  return {
    ...archivedPrefix(row),
    record: row.record ? toLambdaJson(row.record) : null,
    retraction: row.retraction ? toRetractionJson(row.retraction) : null,
  };
}
