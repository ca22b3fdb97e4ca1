export {
  planReplay,
  replay,
  type ReplayDeps,
  type ReplayPlan,
  type ReplayResult,
  type ReplayProgress,
} from './replay';
export { ReplayOptionsSchema, type ReplayOptions, type ReplayOptionsInput } from './options';
