// hyparquet's page header reader, for the erasure test's scan of every page (test/unit/archive-tools/erase/parquet-erase.test.ts).
// Its types resolve only under node16 module resolution; the project uses node's.
declare module 'hyparquet/src/column.js' {
  import type { PageHeader } from 'hyparquet';
  export function parquetHeader(reader: { view: DataView; offset: number }): PageHeader;
}
