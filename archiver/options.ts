import type { TtlstreamConfig } from '../core/config';
import type { ArchiverOptions } from './archiver';

/**
 * The archiver's tuning knobs from the configuration (`archive.*`), for every way of starting it (the archiver's
 * own entry point and `ttlstream run --roles archiver`); unset knobs keep the archiver's defaults.
 */
export function archiverOptionsFrom(config: TtlstreamConfig): ArchiverOptions {
  const { monitorIntervalMs, sessionTimeoutMs, rebalanceTimeoutMs } = config.archive;
  return {
    ...(monitorIntervalMs ? { monitorIntervalMs, topicRefreshMs: monitorIntervalMs } : {}),
    // Heartbeats well inside the session, as Kafka recommends (a third or less); short sessions move a killed
    // member's partitions quickly.
    ...(sessionTimeoutMs
      ? { sessionTimeoutMs, heartbeatIntervalMs: Math.max(500, Math.floor(sessionTimeoutMs / 5)) }
      : {}),
    ...(rebalanceTimeoutMs ? { rebalanceTimeoutMs } : {}),
  };
}
