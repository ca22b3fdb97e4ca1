import { archivedRecordType, type AvroArchivedRecord } from '../../schemas';
import { parquetColumns, ttlAttributes } from './parquet-rows';
import { walkRowChunks } from './parquet-walk';
import { writeParquet } from './parquet-write';
import type { DataFileContext } from './types';

/**
 * One Parquet data file from its rows' Avro archive-row bytes, laid end to end in chunks (what
 * the archiver's Parquet file writer keeps while a roll fills). Pure and self-contained: the
 * archiver runs it on an encoding thread (parquet-pool.ts), so a roll's columns, pages and zstd
 * never hold up the thread that consumes Kafka.
 */
export function encodeRowChunks(chunks: readonly Uint8Array[], context: DataFileContext): Buffer {
  const walked = walkRowChunks(chunks, context.ttl ? ttlAttributes(context.ttl) : []);
  if (walked)
    return writeParquet(
      parquetColumns(walked.rows, context, { dynamo: walked.dynamoImages, plain: walked.plainImages }),
      context.zstdLevel,
    );
  const rows: AvroArchivedRecord[] = [];
  for (const chunk of chunks) {
    const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    for (let pos = 0; pos < buf.length;) {
      const { value, offset } = archivedRecordType.decode(buf, pos) as {
        value: AvroArchivedRecord;
        offset: number;
      };
      rows.push(value);
      pos = offset;
    }
  }
  return writeParquet(parquetColumns(rows, context), context.zstdLevel);
}
