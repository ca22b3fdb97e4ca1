import type { TableTtlSettings } from '../../policy/settings';
import type { ArchivedRecord } from '../../schemas';
import type { RowBytes } from '../rows';
import type { DataFormat } from '../storage/layout';

/**
 * One data-file format of the archive (docs/decisions/0031). The archiver builds every row as its
 * Avro archive-row bytes (the contract's encoding, copied from the message when it can); a format
 * turns a file's rows into its bytes and back. Everything else (layout, key indexes, manifests,
 * the hash chain, erasure generations, purge) is the same for every format, so readers pick the
 * format by the file's extension (`formatOfPath`) and nothing else knows which one they read.
 */
export interface DataFileFormat {
  readonly name: DataFormat;
  /** A writer for one data file of a roll; rows are added in file order. */
  newWriter(): DataFileWriter;
  /** Every row of a file, validated against the contract; a damaged file is a ValidationError naming `path`. */
  decode(body: Buffer, path: string): Promise<ArchivedRecord[]>;
  /** A file of these rows, in this order. */
  encode(rows: ArchivedRecord[], context: DataFileContext): Promise<Buffer>;
  /**
   * A new file of only the rows numbered `keep` (ascending), each row's stored values copied as
   * they are (an erasure's rewrite). Built from the kept rows alone: nothing of a dropped row can
   * survive in it (no statistic, dictionary or page was computed over one).
   */
  keepRows(body: Buffer, path: string, keep: number[]): Promise<KeptRows>;
}

export interface KeptRows {
  data: Buffer;
  /** Rows the original file holds (the caller checks it against the key index). */
  total: number;
  /** eventIDs of the kept rows, in order. */
  eventIDs: string[];
}

/** What a file's bytes may depend on beyond its rows. */
export interface DataFileContext {
  /** The table's TTL settings as known when the file is written (Parquet's `expired_at`, `ttl_mode`); null: unknown. */
  ttl: TableTtlSettings | null;
  /** Parquet's zstd level (archive.parquetZstdLevel); default PARQUET_ZSTD_LEVEL. */
  zstdLevel?: number;
  /** Avro's deflate level (archive.avroDeflateLevel); default zlib's (6). */
  deflateLevel?: number;
}

/** The compression levels a roll's files are written at (archive.parquetZstdLevel, archive.avroDeflateLevel). */
export type CompressionLevels = Pick<DataFileContext, 'zstdLevel' | 'deflateLevel'>;

export interface DataFileWriter {
  /** Append the next row (its Avro archive-row bytes). */
  add(row: RowBytes): void;
  /** Rows appended. */
  readonly rowCount: number;
  /** Uncompressed Avro bytes appended: what rolls are sized by, whatever the format. */
  readonly rawBytes: number;
  /** The complete file. One call per writer. */
  finish(context: DataFileContext): Promise<Buffer>;
}
