export { eraseArchive, type EraseOptions, type EraseResult, type ErasedFile } from './erase';
export { readErasedDigests, readErasureEntry, digestOfIndexKey } from './ledger';
export {
  ErasureEntrySchema,
  EraseRecordSchema,
  erasurePath,
  eraseRecordPath,
  type ErasureEntry,
  type EraseRecord,
  type Generation,
} from './records';
export { planFileRewrite, nextGeneration, withGeneration, supersededPaths } from './plan';
