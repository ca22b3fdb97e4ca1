import { sdkRequestOf } from '../core/clients';
import type { Logger } from '../core/logger';
import { errorLabel, metrics, tableLabel } from '../core/metrics';

/** What a scanner worker was doing when it failed: a scan pass (or sweep) of a segment, or a query of an index shard. */
export type ScanRound = 'scan-pass' | 'index-query';

/** What failed, as `ttlstream status` and the stalled-scanner alert name it (the labels of the last-failure series). */
export interface FailureFacts {
  service: string;
  operation: string;
  error: string;
  message: string;
}

/** A label value is kept short: the first line of the message, at most this many characters. */
const MAX_MESSAGE_CHARS = 200;
/** While a table fails the same way, a warning says how often at most this often; the first failure is logged at once. */
export const REPEAT_LOG_MS = 60_000;

/**
 * The facts of a failure: the AWS SDK request it came from (else ttlstream's own round), its code or name, and the
 * first line of its message with the HTTP status of the answer, so an answer the SDK could not read (moto's HTML
 * 500 page reads as "Unexpected token '<'") still says what the server did.
 */
export function failureFacts(err: unknown, round: ScanRound): FailureFacts {
  const request = sdkRequestOf(err);
  const raw = err instanceof Error ? err.message : String(err);
  const line = (raw.split('\n')[0] ?? '').replace(/\s+/g, ' ').trim();
  const status = (err as { $metadata?: { httpStatusCode?: unknown } } | null)?.$metadata?.httpStatusCode;
  const text = typeof status === 'number' && status >= 400 ? `HTTP ${status}: ${line}` : line;
  return {
    service: request?.service ?? 'ttlstream',
    operation: request?.operation ?? round,
    error: errorLabel(err),
    message: text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS - 1)}…` : text,
  };
}

/** A table failing the same way again and again, across its workers. */
interface Streak {
  fingerprint: string;
  failures: number;
  sinceMs: number;
  lastMs: number;
  loggedAtMs: number;
  /** Failures since the last warning. */
  unlogged: number;
}

/**
 * The failures of each table's scans and index queries, for one scanner: every failure is counted
 * (ttlstream_scanner_failures_total) and becomes the table's last failure (one series per table,
 * ttlstream_scanner_last_failure_timestamp_seconds, which `ttlstream status` and the TtlstreamScannerStalled alert
 * read). The log says a failure once, then, while the table's workers keep failing the same way (one warning per
 * worker per back-off step was about twenty in two minutes for a table with four segments), once a minute with the
 * count, and once more when its passes or queries complete again without a failure for a minute.
 */
export class ScanFailures {
  private readonly streaks = new Map<string, Streak>();
  private readonly lastLabels = new Map<string, Record<string, string>>();

  constructor(private readonly now: () => number) {}

  /** A worker's round of `table` failed with `err` and will be retried: counted, and logged as said above. */
  failed(table: string, round: ScanRound, err: unknown, log: Logger): void {
    const facts = this.counted(table, round, err);
    const now = this.now();
    const fingerprint = JSON.stringify(facts);
    const streak = this.streaks.get(table);
    if (!streak || streak.fingerprint !== fingerprint) {
      this.streaks.set(table, {
        fingerprint,
        failures: 1,
        sinceMs: now,
        lastMs: now,
        loggedAtMs: now,
        unlogged: 0,
      });
      log.warn(
        { err, ...facts },
        `${round} of ${table} failed; retrying with back-off (the same failure again is logged once a minute, with its count)`,
      );
      return;
    }
    streak.failures++;
    streak.unlogged++;
    streak.lastMs = now;
    if (now - streak.loggedAtMs < REPEAT_LOG_MS) return;
    log.warn(
      { ...facts, failures: streak.failures, since: new Date(streak.sinceMs).toISOString() },
      `${round} of ${table} still failing the same way: ${streak.unlogged} more failures (${streak.failures} since ${new Date(streak.sinceMs).toISOString()})`,
    );
    streak.loggedAtMs = now;
    streak.unlogged = 0;
  }

  /**
   * A round of `table` failed with `err`: counted, and the table's last failure, without a log line (for an error
   * that ends the worker's work, which the lease group logs with its code). Returns what failed.
   */
  counted(table: string, round: ScanRound, err: unknown): FailureFacts {
    const facts = failureFacts(err, round);
    const label = tableLabel(table);
    metrics.scannerFailures.inc({ table: label, operation: facts.operation });
    const labels = { table: label, ...facts };
    const previous = this.lastLabels.get(label);
    if (previous && JSON.stringify(previous) !== JSON.stringify(labels))
      metrics.scannerLastFailure.remove(previous);
    this.lastLabels.set(label, labels);
    metrics.scannerLastFailure.set(labels, this.now() / 1000);
    return facts;
  }

  /**
   * A pass or query of `table` completed. A failing streak is over once a minute has passed without a failure: a
   * table whose other segments keep failing (one segment fails, three pass) stays one streak, not a warning per pass.
   */
  succeeded(table: string, log: Logger): void {
    const streak = this.streaks.get(table);
    if (!streak || this.now() - streak.lastMs < REPEAT_LOG_MS) return;
    this.streaks.delete(table);
    log.info(
      {
        table,
        failures: streak.failures,
        since: new Date(streak.sinceMs).toISOString(),
        last: new Date(streak.lastMs).toISOString(),
      },
      `${table} is read again: ${streak.failures} failures from ${new Date(streak.sinceMs).toISOString()}, none for a minute`,
    );
  }
}
