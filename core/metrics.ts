import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * The one Prometheus registry of a process. Components declare their metrics here so names stay
 * unique and documented in one place; /metrics serves `registry.metrics()`.
 */
export const registry = new Registry();
let defaultsCollected = false;
export function collectProcessMetrics(): void {
  if (defaultsCollected) return;
  defaultsCollected = true;
  collectDefaultMetrics({ register: registry, prefix: 'ttlstream_process_' });
}

function counter(name: string, help: string, labelNames: string[]): Counter<string> {
  return new Counter({ name, help, labelNames, registers: [registry] });
}
function gauge(name: string, help: string, labelNames: string[]): Gauge<string> {
  return new Gauge({ name, help, labelNames, registers: [registry] });
}

/** Label values a process keeps per table-labelled metric at most; later tables count as `other`. */
export const MAX_TABLE_LABELS = 1000;
export const OTHER_TABLE = 'other';
const labelledTables = new Set<string>();

/**
 * Make a table a label value of its own: ttlstream's tables and the tables that have TTL settings
 * (the settings store names them). Every series lives until the process exits, so a label value taken
 * from request input (any table name a caller makes up) would let callers grow /metrics and the
 * process's memory without bound (40,000 series from anonymous requests, once; test/unit/control/api/hardening.test.ts).
 */
export function labelTable(table: string): void {
  if (labelledTables.size < MAX_TABLE_LABELS) labelledTables.add(table);
}

/** The `table` label value for a table: its name if labelTable named it, else `other`. */
export function tableLabel(table: string): string {
  return labelledTables.has(table) ? table : OTHER_TABLE;
}

/**
 * The label value that says why something failed, from a bounded vocabulary: a system error's code (EACCES, EROFS,
 * ENOSPC: what a file-system archive fails with), else the error's name (an AWS SDK error's name is the service's
 * error code: AccessDenied, NoSuchBucket, KMS.DisabledException, ProvisionedThroughputExceededException), else
 * `unknown`; a name that does not look like one (too long, odd characters) is `other`. An answer the SDK could not
 * read an error code from (a proxy's or gateway's bare 403 or 502: the SDK names it `Unknown`) is `http_<status>`.
 */
export function errorLabel(err: unknown): string {
  const e = err as { code?: unknown; $metadata?: { httpStatusCode?: unknown } } | null;
  // EACCES, EAI_AGAIN; not Node's own ERR_* codes, whose error names (TypeError, RangeError) say more.
  if (typeof e?.code === 'string' && /^E(?!RR_)[A-Z0-9_]{1,30}$/.test(e.code)) return e.code;
  const name = err instanceof Error ? err.name : 'unknown';
  const status = e?.$metadata?.httpStatusCode;
  if (
    name === 'Unknown' &&
    typeof status === 'number' &&
    Number.isInteger(status) &&
    status >= 100 &&
    status < 600
  )
    return `http_${status}`;
  return /^[A-Za-z0-9_.]{1,64}$/.test(name) ? name : 'other';
}

export const metrics = {
  // every DynamoDB API request this process sends (core/clients.ts), by operation and table
  dynamodbRequests: counter(
    'ttlstream_dynamodb_requests_total',
    'DynamoDB API requests sent, by operation and table (ttlstream\'s own tables and those with TTL settings; the rest are "other")',
    ['operation', 'table'],
  ),
  // every DynamoDB Streams request the streams role's client sends (core/clients.ts), by operation
  dynamodbStreamsRequests: counter(
    'ttlstream_dynamodb_streams_requests_total',
    'DynamoDB Streams requests sent (the streams role), by operation',
    ['operation'],
  ),
  // every S3 request the archive's client sends (core/clients.ts), by operation: what `ttlstream iam-policy` grants
  s3Requests: counter(
    'ttlstream_s3_requests_total',
    'S3 requests sent, by operation (a multipart upload counts its create, parts and completion)',
    ['operation'],
  ),
  sdkRetries: counter(
    'ttlstream_sdk_retries_total',
    'Attempts the AWS SDK retried on its own (throttling, 5xx, timed-out connections), by service and operation',
    ['service', 'operation'],
  ),
  sdkErrors: counter(
    'ttlstream_sdk_errors_total',
    'AWS SDK requests that failed after their last attempt, by service, operation and error name (ConditionalCheckFailedException is the deletion protocol at work, not a fault)',
    ['service', 'operation', 'error'],
  ),
  kafkaClientErrors: counter(
    'ttlstream_kafka_client_errors_total',
    'Errors the Kafka client reported: kind "transient" for conditions it retries itself (rebalances, leader moves, reconnects; logged at warn), "error" for the rest (logged at error)',
    ['kind'],
  ),
  // scanner
  scanPasses: counter('ttlstream_scanner_passes_total', 'Scan passes completed over a segment', ['table']),
  itemsScanned: counter('ttlstream_scanner_items_scanned_total', 'Items read by the scanner', ['table']),
  expiredFound: counter('ttlstream_scanner_expired_found_total', 'Expired items found and marked', ['table']),
  ignoredValues: counter('ttlstream_scanner_ignored_values_total', 'TTL values ignored, by reason', [
    'table',
    'reason',
  ]),
  passDuration: new Histogram({
    name: 'ttlstream_scanner_pass_duration_seconds',
    help: 'Duration of one pass over one segment',
    labelNames: ['table'],
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300],
    registers: [registry],
  }),
  // scanner, index mode (decision 0011)
  itemsQueried: counter(
    'ttlstream_scanner_items_queried_total',
    'Items read from the expiry index by Query (index mode)',
    ['table'],
  ),
  indexRewinds: counter(
    'ttlstream_scanner_index_rewinds_total',
    'Due rewinds of an expiry-index shard (index mode): rewound from the lowest expiry, or deferred while the head of the shard was its backlog being deleted',
    ['table', 'outcome'],
  ),
  sweepExpiredFound: counter(
    'ttlstream_scanner_sweep_expired_found_total',
    'Expired items the safety-net sweep of an index-mode table found',
    ['table'],
  ),
  expiryIndexMissed: counter(
    'ttlstream_scanner_expiry_index_missed_total',
    'Expired items the safety-net sweep found outside the expiry index (written by a writer without the stamp); an item is counted when the sweep marks it, not again while that mark stands',
    ['table'],
  ),
  lastPassTimestamp: gauge(
    'ttlstream_scanner_last_pass_timestamp_seconds',
    'Unix time this process last completed a scan pass over a segment (scan mode) or a query of an expiry-index shard to its end (index mode), by table',
    ['table'],
  ),
  segmentsOwned: gauge('ttlstream_scanner_segments_owned', 'Scan segments leased by this process', ['table']),
  scannerFailures: counter(
    'ttlstream_scanner_failures_total',
    "Scan passes, safety-net sweeps and expiry-index queries of the table that failed (each is retried with back-off while its lease lasts), by the request that failed: the AWS SDK command (ScanCommand, QueryCommand, BatchWriteItemCommand of the marks, ...), or scan-pass / index-query for a failure of ttlstream's own",
    ['table', 'operation'],
  ),
  scannerLastFailure: gauge(
    'ttlstream_scanner_last_failure_timestamp_seconds',
    "Unix time of this process's latest failed scan pass, sweep or index query of the table, in one series per table whose labels say what failed: service (dynamodb, or ttlstream for a failure of its own), operation (as in ttlstream_scanner_failures_total), error (its code or name, as ttlstream_sdk_errors_total's) and message (its first line, at most 200 characters, with the HTTP status of the answer); `ttlstream status` shows it beside the last pass",
    ['table', 'service', 'operation', 'error', 'message'],
  ),
  // producer
  deletions: counter('ttlstream_producer_deletions_total', 'Items deleted by TTL', ['table']),
  recordsPublished: counter('ttlstream_producer_records_published_total', 'Stream records published', [
    'table',
    'kind',
  ]),
  deletesSkipped: counter('ttlstream_producer_deletes_skipped_total', 'Marked items not deleted, by reason', [
    'table',
    'reason',
  ]),
  expiryToRecordSeconds: new Histogram({
    name: 'ttlstream_producer_expiry_to_record_seconds',
    help: 'Lag from expiry to the REMOVE record on Kafka',
    labelNames: ['table'],
    buckets: [0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 3600],
    registers: [registry],
  }),
  deletionLag: gauge(
    'ttlstream_producer_deletion_lag_seconds',
    'Expiry-to-record lag of the latest REMOVE records this producer published for the table (the largest of its last batch; the histogram ttlstream_producer_expiry_to_record_seconds has the distribution)',
    ['table'],
  ),
  marksBacklog: gauge(
    'ttlstream_producer_marks_backlog',
    'Marks of the table found by the latest complete sweep of each mark shard this producer holds: the backlog as those sweeps began (marks still to be deleted, judged or released by the guard)',
    ['table'],
  ),
  shardsOwned: gauge('ttlstream_producer_shards_owned', 'Mark shards leased by this producer', []),
  batchDuration: new Histogram({
    name: 'ttlstream_producer_batch_seconds',
    help: 'Duration of one producer batch (read, intents, publish, deletes, cleanup)',
    labelNames: [],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
    registers: [registry],
  }),
  guardPaused: gauge(
    'ttlstream_guard_paused',
    "1 while the table's mass-deletion guard is PAUSED, 0 otherwise, as stored in the control table: each producer re-reads the state of every enabled table every guard.gaugeRefreshMs (pipeline/guard/gauge.ts), so every producer reports the same",
    ['table'],
  ),
  // archiver
  archiveFiles: counter('ttlstream_archiver_files_written_total', 'Archive files written', ['sink']),
  archiveBytes: counter('ttlstream_archiver_bytes_written_total', 'Archive bytes written', ['sink']),
  archiveRecords: counter('ttlstream_archiver_records_total', 'Records archived', ['topic']),
  deadLettered: counter(
    'ttlstream_archiver_dead_letter_total',
    'Poison records sent to the dead-letter topic',
    ['topic', 'reason'],
  ),
  lagAlertSeconds: gauge(
    'ttlstream_archiver_lag_alert_seconds',
    'archive.lagAlertMs of this archiver in seconds: the oldest-unarchived age above which it logs ARCHIVE LAG (alerting rules compare against it)',
    [],
  ),
  oldestUnarchivedSeconds: gauge(
    'ttlstream_archiver_oldest_unarchived_seconds',
    'Age of the oldest record not yet archived',
    ['topic', 'partition'],
  ),
  recordsBehind: gauge('ttlstream_archiver_records_behind', 'Records on Kafka not yet archived', [
    'topic',
    'partition',
  ]),
  archiveLineageMismatch: gauge(
    'ttlstream_archiver_lineage_mismatch',
    '1 while the archive or the group claims offsets beyond the partition (topic re-created under the same name); the partition is not archived',
    ['topic', 'partition'],
  ),
  archiveLoss: gauge(
    'ttlstream_archiver_loss',
    "1 while the partition has a loss (records aged out of Kafka before being archived) no operator acknowledged (`ttlstream archive ack-loss`), 0 once acknowledged: from the archive's _loss/ and _loss-ack/ records, re-read by every archiver (archiver/loss.ts), so all report the same and a restart changes nothing",
    ['topic', 'partition'],
  ),
  archiveLostRecords: counter(
    'ttlstream_archiver_lost_records_total',
    'Offsets that aged out of Kafka before being archived',
    ['topic'],
  ),
  archiveSkipped: counter(
    'ttlstream_archiver_skipped_total',
    'Messages not archived: duplicate eventID or replayed from the archive',
    ['topic', 'reason'],
  ),
  archiveRollErrors: counter(
    'ttlstream_archiver_roll_errors_total',
    'Failed attempts to write a roll (retried), by sink and reason: the error code or name (AccessDenied, NoSuchBucket, KMS.DisabledException, EACCES, EROFS, ENOSPC, ...; core/metrics.ts errorLabel)',
    ['sink', 'reason'],
  ),
  archiveRollFailing: gauge(
    'ttlstream_archiver_roll_failing',
    "1 while the partition's latest roll attempt failed and the roll waits to be retried, 0 once a roll of it is written (or given up to another owner)",
    ['topic', 'partition'],
  ),
  archivePurgedFiles: counter(
    'ttlstream_archiver_purged_files_total',
    'Archive data files removed because their records were past the retention (each recorded under _purge/)',
    ['sink'],
  ),
  archiveErasedDropped: counter(
    'ttlstream_archiver_erased_dropped_total',
    'Records of keys in the erasure ledger left out of a roll (still on Kafka after their erasure)',
    ['topic', 'table'],
  ),
  archivePurgeErrors: counter(
    'ttlstream_archiver_purge_errors_total',
    'Scheduled retention purges that failed (tried again at the next interval)',
    ['sink'],
  ),
  archiveCompactedFiles: counter(
    'ttlstream_archiver_compacted_files_total',
    'Data files compacted (docs/decisions/0037), by sink and side: `in` the files replaced (rolls, or small compacted files merged again), `out` the compacted files written',
    ['sink', 'side'],
  ),
  archiveCompactedBytes: counter(
    'ttlstream_archiver_compacted_bytes_total',
    'Bytes of the data files compacted, by sink and side (`in` replaced, `out` written)',
    ['sink', 'side'],
  ),
  archiveCompactionErrors: counter(
    'ttlstream_archiver_compaction_errors_total',
    'Hours (or days, for their key index) a scheduled compaction failed to compact (tried again at the next run), and runs that failed as a whole',
    ['sink'],
  ),
  archiveCompactionLag: gauge(
    'ttlstream_archiver_compaction_lag_seconds',
    "Seconds since the oldest closed hour still holding a roll's file became due for compaction (its end plus archive.compactAfterMs), as this process's last compaction run found it; 0 when none. Each archiver process lists the archive and sets it, whichever compacts (TtlstreamArchiveCompactionBehind)",
    [],
  ),
  archiveCompactionLastRun: gauge(
    'ttlstream_archiver_compaction_last_run_timestamp_seconds',
    "When this process's last scheduled compaction run ended (epoch seconds), whether it compacted anything or not",
    [],
  ),
  // streams (following DynamoDB Streams)
  streamsRecords: counter(
    'ttlstream_streams_records_total',
    "Records read from followed streams, by outcome: published; not-remove (INSERT, MODIFY); not-ttl (a REMOVE without DynamoDB's TTL identity, streams.removes ttl); no-old-image (the stream keeps no old images); invalid (breaks the stream contract: dead-lettered)",
    ['table', 'outcome'],
  ),
  streamsPublished: counter(
    'ttlstream_streams_records_published_total',
    'REMOVE records of followed streams published to the stream topics (acknowledged by all in-sync replicas)',
    ['table'],
  ),
  streamsLagSeconds: gauge(
    'ttlstream_streams_lag_seconds',
    "Age of the oldest record of the table's stream not yet read and published, by the shards this process reads (0 when caught up); DynamoDB Streams drops records after 24 hours",
    ['table'],
  ),
  streamsShardsHeld: gauge(
    'ttlstream_streams_shards_held',
    'Stream shards this process reads under a lease',
    ['table'],
  ),
  streamsProblem: gauge(
    'ttlstream_streams_problem',
    "1 while a followed table's stream cannot give its deletions: its stream is off (stream-off) or keeps no old images (no-old-image); 0 otherwise",
    ['table', 'problem'],
  ),
  streamsReadErrors: counter(
    'ttlstream_streams_read_errors_total',
    'Failed reads of followed streams (retried), by operation and error',
    ['table', 'operation', 'error'],
  ),
  streamsLoss: gauge(
    'ttlstream_streams_loss',
    "1 while the table's stream has a loss (records that left DynamoDB Streams before they were read, recorded under _stream-loss/ in the archive) no operator acknowledged (`ttlstream archive ack-loss --table`); 0 after",
    ['table'],
  ),
  streamsLost: counter(
    'ttlstream_streams_lost_shards_total',
    'Shards whose records after the checkpoint left the stream (24 hours) before they were read: recorded under _loss/ in the archive',
    ['table'],
  ),
  // every process: what `ttlstream run --roles` started in it
  roleUp: gauge(
    'ttlstream_role_up',
    '1 for each role this process runs (ttlstream run --roles), from its start until its stop; absent otherwise, so absent(ttlstream_role_up{role="archiver"}) says no scraped process runs that role (TtlstreamRoleAbsent)',
    ['role'],
  ),
  // api
  apiRequests: counter('ttlstream_api_requests_total', 'Control-plane requests', ['route', 'status']),
};

// A label set known in advance starts at 0, so rate() has a series (and a dashboard a line) before the first error.
for (const kind of ['transient', 'error']) metrics.kafkaClientErrors.inc({ kind }, 0);
