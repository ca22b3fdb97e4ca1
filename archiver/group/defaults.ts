/**
 * The archiver's knobs that the configuration does not have (tests and the benchmark set them), or has under
 * `archive.*` (monitorIntervalMs, sessionTimeoutMs, rebalanceTimeoutMs): over the configuration, each with a default.
 */
export interface ArchiverTuning {
  /** How often watermarks are read for the lag, age and loss checks. */
  monitorIntervalMs?: number;
  /** How often the topic list is read to pick up new per-table topics. */
  topicRefreshMs?: number;
  /** eventIDs remembered per partition for de-duplication. */
  dedupWindow?: number;
  /** At most this many complete rolls are read back to rebuild the de-duplication window. */
  dedupManifests?: number;
  /** Graceful stop gives up waiting for rolls after this long (their offsets stay uncommitted). */
  stopTimeoutMs?: number;
  /** Passed to the kafkajs consumer. */
  maxBytesPerPartition?: number;
  maxBytes?: number;
  partitionsConsumedConcurrently?: number;
  sessionTimeoutMs?: number;
  /**
   * How long the group coordinator waits for members to rejoin in a rebalance; kafkajs also waits this + 5 s for a
   * JoinGroup answer, so it bounds how long a join on a silent connection stalls before the consumer is replaced.
   */
  rebalanceTimeoutMs?: number;
  heartbeatIntervalMs?: number;
  /** Longest a fetch waits for data; also bounds how long a stop waits for the fetch in flight. */
  maxWaitTimeMs?: number;
  /** Rolls of one partition queued or being written before consuming it waits (memory: rollBytes each). */
  maxQueuedRolls?: number;
}

export function withDefaults(o: ArchiverTuning = {}): Required<ArchiverTuning> {
  return {
    monitorIntervalMs: o.monitorIntervalMs ?? 15_000,
    topicRefreshMs: o.topicRefreshMs ?? 30_000,
    dedupWindow: o.dedupWindow ?? 100_000,
    dedupManifests: o.dedupManifests ?? 64,
    stopTimeoutMs: o.stopTimeoutMs ?? 60_000,
    maxBytesPerPartition: o.maxBytesPerPartition ?? 4 * 1024 * 1024,
    maxBytes: o.maxBytes ?? 32 * 1024 * 1024,
    partitionsConsumedConcurrently: o.partitionsConsumedConcurrently ?? 4,
    sessionTimeoutMs: o.sessionTimeoutMs ?? 30_000,
    // kafkajs's default. Members rejoin quickly (a rebalance releases their batches), so this is mostly the bound above.
    rebalanceTimeoutMs: o.rebalanceTimeoutMs ?? 60_000,
    heartbeatIntervalMs: o.heartbeatIntervalMs ?? 3_000,
    maxWaitTimeMs: o.maxWaitTimeMs ?? 1_000,
    maxQueuedRolls: o.maxQueuedRolls ?? 2,
  };
}
