export {
  openCatalog,
  normalizeKey,
  hashKeyValue,
  type Catalog,
  type CatalogFile,
  type CatalogRow,
  type CatalogVersion,
  type ScanFilter,
} from './catalog';
export { compareVersions, compareSequenceNumbers, type Versioned } from './order';
export { inRange, type TimeRange } from './range';
