import { deleterOf, type Deleter, type TableTtlSettings } from '../../policy/settings';
import type { Sample } from './prometheus';

/** What `ttlstream status` knows of a table from the control table (read-only). */
export interface TableFacts {
  table: string;
  /** ENABLED, ENABLING, DISABLING, DISABLED. */
  ttl: string;
  settings: TableTtlSettings | null;
  /** The expiry index's state (CREATING, BACKFILLING, ACTIVE, ...) when the settings have one. */
  expiryIndex: string | null;
  /** The guard's state (ARMED, PAUSED, CONFIRMED), or NOT_GUARDED when TTL is off. */
  guard: string;
  /** The stream topic its REMOVE records go to (core/topics.ts streamTopicFor). */
  topic: string;
}

/** One `/metrics` endpoint of a running `ttlstream run`: its samples, or why it gave none. */
export type Scrape = { url: string; samples: Sample[] } | { url: string; error: string };

export interface TableStatus {
  table: string;
  ttl: string;
  mode: string | null;
  attribute: string | null;
  expiryIndex: string | null;
  guard: string;
  /** From the processes' metrics; null when no process that answered reports it. */
  lastPassAt: string | null;
  lastPassAgeSeconds: number | null;
  marksBacklog: number | null;
  deletionLagSeconds: number | null;
  archiveTopic: string;
  archiveLagSeconds: number | null;
  archiveRecordsBehind: number | null;
  /** Who deletes the table's expired items: ttlstream's deleter, or DynamoDB's TTL followed by the streams role. */
  deleter: Deleter;
  /** The streams role's lag on the table's stream (age of its oldest unread record); null when none reports it. */
  streamLagSeconds: number | null;
  /** What keeps the table's stream from giving its deletions (stream-off, no-old-image); null when nothing does. */
  streamProblem: string | null;
  /** True while the table's stream has a loss no operator acknowledged; null when no streams role reports it. */
  streamLoss: boolean | null;
  /** Failed scan passes, sweeps and index queries of the table, summed over the processes; null when none reports. */
  scanFailures: number | null;
  /** The latest failed scan pass, sweep or index query of the table in any process: what failed, and when. */
  lastFailure: ScanFailure | null;
  /** The last failure is later than the last pass (or there is no pass): the table's scanning fails now. */
  failing: boolean;
}

/** A failed scan or index query (the labels of ttlstream_scanner_last_failure_timestamp_seconds). */
export interface ScanFailure {
  at: string;
  ageSeconds: number;
  service: string;
  operation: string;
  error: string;
  message: string;
}

export interface SourceStatus {
  url: string;
  answered: boolean;
  error?: string;
}

export interface StatusReport {
  at: string;
  sources: SourceStatus[];
  tables: TableStatus[];
}

/** The TTL attribute(s) a mode reads, for the status line. */
function attributeOf(settings: TableTtlSettings): string {
  const p = settings.policy;
  if (p.mode === 'dynamodb') return p.attributeName;
  if (p.mode === 'cosmos') return `${p.ttlAttribute}, ${p.lastWriteAttribute}`;
  return p.timeField;
}

function valuesOf(
  scrapes: Scrape[],
  name: string,
  match: (labels: Record<string, string>) => boolean,
): number[] {
  const out: number[] = [];
  for (const s of scrapes) {
    if (!('samples' in s)) continue;
    for (const sample of s.samples) {
      if (sample.name === name && match(sample.labels) && Number.isFinite(sample.value))
        out.push(sample.value);
    }
  }
  return out;
}

const max = (values: number[]): number | null => (values.length > 0 ? Math.max(...values) : null);
const sum = (values: number[]): number | null =>
  values.length > 0 ? values.reduce((a, b) => a + b, 0) : null;

/** Per (topic, partition) the largest figure any process reports (an archiver reports the partitions it holds). */
function perPartition(scrapes: Scrape[], name: string, topic: string): number[] {
  const byPartition = new Map<string, number>();
  for (const s of scrapes) {
    if (!('samples' in s)) continue;
    for (const sample of s.samples) {
      if (sample.name !== name || sample.labels.topic !== topic || !Number.isFinite(sample.value)) continue;
      const p = sample.labels.partition ?? '';
      byPartition.set(p, Math.max(sample.value, byPartition.get(p) ?? -Infinity));
    }
  }
  return [...byPartition.values()];
}

/** The latest failure any process reports for `table`, with what failed. */
function lastFailureOf(scrapes: Scrape[], table: string, nowMs: number): ScanFailure | null {
  let latest: Sample | undefined;
  for (const s of scrapes) {
    if (!('samples' in s)) continue;
    for (const sample of s.samples)
      if (
        sample.name === 'ttlstream_scanner_last_failure_timestamp_seconds' &&
        sample.labels.table === table &&
        Number.isFinite(sample.value) &&
        (latest === undefined || sample.value > latest.value)
      )
        latest = sample;
  }
  if (!latest) return null;
  const l = latest.labels;
  return {
    at: new Date(latest.value * 1000).toISOString(),
    ageSeconds: Math.max(0, Math.round(nowMs / 1000 - latest.value)),
    service: l.service ?? '',
    operation: l.operation ?? '',
    error: l.error ?? '',
    message: l.message ?? '',
  };
}

/**
 * The status of each table (pure): the control table's facts with the figures of every process that answered.
 * Several processes (roles scaled out): the latest pass of any, the backlog summed (producers hold disjoint
 * shards), the largest deletion lag; archive lag per partition, the oldest over the table's topic, records behind
 * summed over its partitions (a shared topic's figures are those of every table on it).
 */
export function assembleStatus(facts: TableFacts[], scrapes: Scrape[], nowMs: number): StatusReport {
  const tables = facts.map((f): TableStatus => {
    const byTable = (labels: Record<string, string>): boolean => labels.table === f.table;
    const lastPass = max(valuesOf(scrapes, 'ttlstream_scanner_last_pass_timestamp_seconds', byTable));
    const lastFailure = lastFailureOf(scrapes, f.table, nowMs);
    const failedAt = lastFailure === null ? null : Date.parse(lastFailure.at) / 1000;
    return {
      table: f.table,
      ttl: f.ttl,
      mode: f.settings?.policy.mode ?? null,
      attribute: f.settings ? attributeOf(f.settings) : null,
      expiryIndex: f.expiryIndex,
      guard: f.guard,
      lastPassAt: lastPass !== null ? new Date(lastPass * 1000).toISOString() : null,
      lastPassAgeSeconds: lastPass !== null ? Math.max(0, Math.round(nowMs / 1000 - lastPass)) : null,
      marksBacklog: sum(valuesOf(scrapes, 'ttlstream_producer_marks_backlog', byTable)),
      deletionLagSeconds: max(valuesOf(scrapes, 'ttlstream_producer_deletion_lag_seconds', byTable)),
      archiveTopic: f.topic,
      archiveLagSeconds: max(perPartition(scrapes, 'ttlstream_archiver_oldest_unarchived_seconds', f.topic)),
      archiveRecordsBehind: sum(perPartition(scrapes, 'ttlstream_archiver_records_behind', f.topic)),
      ...streamFigures(scrapes, f),
      scanFailures: sum(valuesOf(scrapes, 'ttlstream_scanner_failures_total', byTable)),
      lastFailure,
      failing: failedAt !== null && (lastPass === null || failedAt > lastPass),
    };
  });
  const sources = scrapes.map((s): SourceStatus =>
    'error' in s ? { url: s.url, answered: false, error: s.error } : { url: s.url, answered: true },
  );
  return { at: new Date(nowMs).toISOString(), sources, tables };
}

/** What the streams role reports of a table: its lag, a problem of its stream, an unacknowledged loss. */
function streamFigures(
  scrapes: Scrape[],
  f: TableFacts,
): Pick<TableStatus, 'deleter' | 'streamLagSeconds' | 'streamProblem' | 'streamLoss'> {
  const byTable = (labels: Record<string, string>): boolean => labels.table === f.table;
  const problems = ['stream-off', 'no-old-image'].filter(
    (p) =>
      (max(valuesOf(scrapes, 'ttlstream_streams_problem', (l) => byTable(l) && l.problem === p)) ?? 0) > 0,
  );
  const loss = max(valuesOf(scrapes, 'ttlstream_streams_loss', byTable));
  return {
    deleter: f.settings ? deleterOf(f.settings) : 'ttlstream',
    streamLagSeconds: max(valuesOf(scrapes, 'ttlstream_streams_lag_seconds', byTable)),
    streamProblem: problems.length > 0 ? problems.join(', ') : null,
    streamLoss: loss === null ? null : loss > 0,
  };
}

/** Lines under the table for what needs an operator: a stream that cannot give its deletions, a stream loss. */
export function streamNotes(report: StatusReport): string[] {
  const out: string[] = [];
  for (const t of report.tables) {
    if (t.streamProblem !== null)
      out.push(
        `table ${t.table}: its stream cannot give DynamoDB's TTL deletions (${t.streamProblem}): see the streams role's log for the fix`,
      );
    if (t.streamLoss === true)
      out.push(
        `table ${t.table}: records of its stream were lost before they were read (_stream-loss/ in the archive); acknowledge with ttlstream archive ack-loss --table ${t.table}`,
      );
  }
  return out;
}

const dash = (v: number | string | null, unit = ''): string => (v === null ? '-' : `${v}${unit}`);

/** The human form: one row per table, then one line per metrics source. */
export function statusRows(report: StatusReport): { headers: string[]; rows: string[][] } {
  return {
    headers: [
      'TABLE',
      'TTL',
      'MODE',
      'ATTRIBUTE',
      'INDEX',
      'GUARD',
      'LAST PASS',
      'BACKLOG',
      'LAG',
      'ARCHIVE LAG',
      'BEHIND',
      'DELETER',
      'STREAM LAG',
    ],
    rows: report.tables.map((t) => [
      t.table,
      t.ttl,
      dash(t.mode),
      dash(t.attribute),
      dash(t.expiryIndex),
      t.guard,
      lastPassCell(t),
      dash(t.marksBacklog),
      dash(t.deletionLagSeconds === null ? null : Number(t.deletionLagSeconds.toFixed(1)), ' s'),
      dash(t.archiveLagSeconds === null ? null : Number(t.archiveLagSeconds.toFixed(1)), ' s'),
      dash(t.archiveRecordsBehind),
      t.deleter,
      dash(t.streamLagSeconds === null ? null : Number(t.streamLagSeconds.toFixed(1)), ' s'),
    ]),
  };
}

function lastPassCell(t: TableStatus): string {
  const failing = t.failing ? 'FAILING, see below' : '';
  if (t.lastPassAt === null) return failing === '' ? '-' : `- (${failing})`;
  return `${t.lastPassAt} (${t.lastPassAgeSeconds} s ago${failing === '' ? '' : `; ${failing}`})`;
}

/** One line per table whose scanning fails now: what failed, how often, and since when there is no pass. */
export function failureLines(report: StatusReport): string[] {
  return report.tables.flatMap((t) => {
    const f = t.lastFailure;
    if (!t.failing || f === null) return [];
    const pass = t.lastPassAt === null ? 'no pass yet' : `no pass since ${t.lastPassAt}`;
    return [
      `${t.table}: ${pass}; scans fail: ${f.service} ${f.operation} ${f.error}: ${f.message} (${dash(t.scanFailures)} failures, the latest ${f.ageSeconds} s ago; ttlstream_scanner_failures_total)`,
    ];
  });
}

export function sourceLines(report: StatusReport): string[] {
  return report.sources.map((s) =>
    s.answered
      ? `metrics ${s.url}: answered`
      : `metrics ${s.url}: no answer (${s.error ?? 'unknown'}): figures from it are missing`,
  );
}
