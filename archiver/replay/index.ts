export { replay, type ReplayDeps, type ReplayResult, type ReplayProgress } from './replay';
export { ReplayOptionsSchema, type ReplayOptions, type ReplayOptionsInput } from './options';
