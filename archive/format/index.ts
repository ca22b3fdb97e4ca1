import { ValidationError } from '../../core/errors';
import type { ArchivedRecord } from '../../schemas';
import { formatOfPath, type DataFormat } from '../storage/layout';
import { avroFormat } from './avro';
import { parquetFormat } from './parquet';
import type { DataFileFormat } from './types';

export type { CompressionLevels, DataFileFormat, DataFileWriter, DataFileContext } from './types';
export { avroFormat, DATA_BLOCK_BYTES } from './avro';
export { checkContainerFraming } from './avro-container';
export { parquetFormat } from './parquet';
export { writeParquet, PARQUET_ROW_GROUP_ROWS, PARQUET_ZSTD_LEVEL } from './parquet-write';
export { parquetEncodingPool, PARQUET_ENCODING_THREADS } from './parquet-pool';
export { PARQUET_COLUMNS, parquetColumns } from './parquet-rows';

const FORMATS: Record<DataFormat, DataFileFormat> = { avro: avroFormat, parquet: parquetFormat };

/** The format named by `archive.format`. */
export function dataFileFormat(name: DataFormat): DataFileFormat {
  return FORMATS[name];
}

/** The format of a data file, from its path (what every reader goes by). */
export function formatOfFile(path: string): DataFileFormat {
  const name = formatOfPath(path);
  if (name === null) throw new ValidationError(`${path}: not an archive data file (.avro or .parquet)`);
  return FORMATS[name];
}

/** Every row of one data file of either format. */
export function decodeDataFile(body: Buffer, path: string): Promise<ArchivedRecord[]> {
  return formatOfFile(path).decode(body, path);
}
