export { moveIndexes, type MoveIndexesOptions, type MoveIndexesResult } from './move-indexes';
