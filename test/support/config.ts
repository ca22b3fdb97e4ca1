import { loadConfig, type ConfigInput, type TtlstreamConfig } from '../../core/config';

/**
 * loadConfig with only `env` (and the config file or overrides in `extra`): no local stack's endpoints file, and
 * none of this process's environment.
 */
export function configFromEnv(
  env: NodeJS.ProcessEnv = {},
  extra: { file?: string; overrides?: ConfigInput } = {},
): TtlstreamConfig {
  return loadConfig({ env, useStackEndpoints: false, ...extra });
}
