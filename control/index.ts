export { TtlSettingsStore, type TtlSettingsStoreOptions } from './settings-store';
export {
  MODIFIED_MULTIPLE_TIMES,
  describeRow,
  planMongoModify,
  planUpdate,
  primaryAttribute,
  statusOf,
  type SettingsRow,
  type TtlDescription,
  type UpdateRequest,
} from './ttl-state';
export { previewExpiring, type PreviewOptions, type PreviewResult } from './preview';
export { buildApiServer, type ApiDeps, type RouteContext } from './api/server';
