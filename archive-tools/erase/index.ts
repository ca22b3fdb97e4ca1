export { eraseArchive, type EraseOptions, type EraseResult, type ErasedFile } from './erase';
export { planFileRewrite, nextGeneration, withGeneration, supersededPaths } from './plan';
