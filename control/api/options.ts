import type { ApiSettings, ProducerSettings, TablesSettings } from '../../core/config';
import { guardActionOptionsFrom, type GuardActionOptions } from '../../pipeline/guard/actions';

/** What the control plane reads of the configuration (a whole configuration is one). */
export interface ApiInput {
  api: ApiSettings;
  region: string;
  tables: Pick<TablesSettings, 'control' | 'marks'>;
  producer: Pick<ProducerSettings, 'shards'>;
}

/**
 * The control plane's options, resolved once at start-up (`apiOptionsFrom`) by whoever builds the server: its own
 * knobs (`api.*`), the region SigV4 signatures are scoped to, and what the guard's operator actions touch.
 */
export interface ApiOptions extends Readonly<ApiSettings> {
  /** `region`: the scope of the AWS-compatible endpoint's SigV4 signatures. */
  region: string;
  /** The guard routes' tables and mark shards. */
  guard: GuardActionOptions;
}

export function apiOptionsFrom(config: ApiInput): ApiOptions {
  return { ...config.api, region: config.region, guard: guardActionOptionsFrom(config) };
}
