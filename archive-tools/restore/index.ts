export {
  restore,
  type RestoreDeps,
  type RestoreResult,
  type RestoreFailure,
  type RestoreProgress,
  type TtlSettingsLookup,
} from './restore';
export {
  RestoreOptionsSchema,
  RestoreTtlModeSchema,
  type RestoreOptions,
  type RestoreOptionsInput,
} from './options';
export {
  applyRestoreTtl,
  effectivePolicy,
  formatTime,
  type RestoreTtlMode,
  type TtlTransformResult,
} from './ttl';
