import { parquetMetadata, type SchemaElement } from 'hyparquet';
import { ValidationError } from '../../core/errors';
import { safeSegment } from '../../archive/storage';

/**
 * `ttlstream archive ddl`: the CREATE EXTERNAL TABLE an engine needs to query a table's Parquet
 * archive in place. Pure: the columns come from one of the table's files (its schema, key columns
 * included); the partitions are the layout's `date=` and `hour=` under `table=` (the table is the
 * location, so it is no partition column). Athena gets partition projection, so no crawler or
 * `MSCK REPAIR` is needed as hours are added. Athena and Trino read every object of a partition folder: the folders
 * hold only data files, as key indexes live under `_index/` (docs/decisions/0033), except in hours written before
 * that still hold theirs beside (`besideIndexes`; `archive move-indexes` moves them).
 */

export const DDL_ENGINES = ['athena', 'spark', 'trino'] as const;
export type DdlEngine = (typeof DDL_ENGINES)[number];

export interface DdlOptions {
  engine: DdlEngine;
  table: string;
  /** The archive root as the engine reaches it, e.g. s3://bucket/prefix. */
  location: string;
  /** The SQL name to create (default `ttlstream_<table>` with non-word characters as _). */
  name?: string;
  /** First date partition projection covers (YYYY-MM-DD). */
  since: string;
  /** Data files of the table whose key index is still beside them (written before docs/decisions/0033). */
  besideIndexes: number;
}

function hiveType(e: SchemaElement): string {
  if (e.converted_type === 'UTF8') return 'string';
  if (e.converted_type === 'TIMESTAMP_MILLIS') return 'timestamp';
  switch (e.type) {
    case 'INT64':
      return 'bigint';
    case 'INT32':
      return 'int';
    case 'BOOLEAN':
      return 'boolean';
    case 'DOUBLE':
      return 'double';
    case 'BYTE_ARRAY':
      return 'binary';
    default:
      throw new ValidationError(`column ${e.name}: no ${e.type} column is expected in the archive`);
  }
}

function trinoType(hive: string): string {
  return { string: 'varchar', timestamp: 'timestamp(3)', binary: 'varbinary', int: 'integer' }[hive] ?? hive;
}

/** The columns of a Parquet data file: name and Hive type. */
export function columnsOfParquet(body: Buffer): Array<{ name: string; type: string }> {
  const file = body.buffer.slice(body.byteOffset, body.byteOffset + body.length) as ArrayBuffer;
  return parquetMetadata(file)
    .schema.slice(1)
    .map((e) => ({ name: e.name, type: hiveType(e) }));
}

export function createTableDdl(columns: Array<{ name: string; type: string }>, o: DdlOptions): string {
  const name = o.name ?? `ttlstream_${o.table.replace(/\W/g, '_')}`;
  const location = `${o.location.replace(/\/+$/, '')}/table=${safeSegment(o.table)}/`;
  if (o.engine === 'trino') {
    const cols = columns.map((c) => `  "${c.name}" ${trinoType(c.type)}`).join(',\n');
    return (
      `CREATE TABLE ${name} (\n${cols},\n  "date" varchar,\n  "hour" varchar\n)\nWITH (\n` +
      `  format = 'PARQUET',\n  external_location = '${location.replace(/^s3:/, 's3a:')}',\n` +
      `  partitioned_by = ARRAY['date', 'hour']\n);\n` +
      `CALL system.sync_partition_metadata(current_schema, '${name}', 'ADD');\n`
    );
  }
  if (o.engine === 'spark') return sparkDdl(name, location.replace(/^s3:/, 's3a:'), o.besideIndexes > 0);
  const cols = columns.map((c) => `  \`${c.name}\` ${c.type}`).join(',\n');
  const head = `CREATE EXTERNAL TABLE ${name} (\n${cols}\n)\nPARTITIONED BY (\`date\` string, \`hour\` string)\nSTORED AS PARQUET\nLOCATION '${location}'`;
  return (
    `${head}\nTBLPROPERTIES (\n` +
    `  'projection.enabled' = 'true',\n` +
    `  'projection.date.type' = 'date',\n  'projection.date.format' = 'yyyy-MM-dd',\n` +
    `  'projection.date.range' = '${o.since},NOW',\n  'projection.date.interval' = '1',\n` +
    `  'projection.date.interval.unit' = 'DAYS',\n` +
    `  'projection.hour.type' = 'integer',\n  'projection.hour.range' = '0,23',\n  'projection.hour.digits' = '2',\n` +
    `  'storage.location.template' = '${location}date=\${date}/hour=\${hour}/'\n);\n`
  );
}

/**
 * Spark: a data source table over the folder, read like `spark.read.parquet(location)` at every query (new hours are
 * seen without `MSCK REPAIR`): the schema merged over the files (older files lack a column added since), `date` and
 * `hour` discovered from the paths. The folders hold only Parquet files (key indexes live under `_index/`, outside the
 * location); while some hour still holds key indexes beside its files, `pathGlobFilter` keeps to `*.parquet`, and the
 * session setting keeps partitions out of the catalog, whose listing would take every object whatever the filter.
 * Tested against a real Spark in test/integration/archive/parquet-readers.test.ts, without the filter.
 */
function sparkDdl(name: string, location: string, besideIndexes: boolean): string {
  const options = besideIndexes ? `pathGlobFilter '*.parquet', mergeSchema 'true'` : `mergeSchema 'true'`;
  return (
    `SET spark.sql.hive.manageFilesourcePartitions = false;\n` +
    `SET spark.sql.sources.partitionColumnTypeInference.enabled = false;\n` +
    `CREATE TABLE ${name}\nUSING parquet\nOPTIONS (${options})\n` +
    `LOCATION '${location}';\n`
  );
}
