import { Counter, Gauge, Registry } from 'prom-client';
import { parsePrometheusText } from '../../../../cli/status/prometheus';
import { defaultMetricsUrl } from '../../../../cli/status/status-io';
import {
  assembleStatus,
  failureLines,
  sourceLines,
  statusRows,
  streamNotes,
  type TableFacts,
} from '../../../../cli/status/report';
import { loadConfig, type ConfigInput } from '../../../../core/config';

describe('parsePrometheusText', () => {
  it('reads what prom-client serves: labels with escapes, histograms, special values', async () => {
    const registry = new Registry();
    const g = new Gauge({
      name: 'x_gauge',
      help: 'a "help"\nline',
      labelNames: ['table'],
      registers: [registry],
    });
    const c = new Counter({
      name: 'x_total',
      help: 'c',
      labelNames: ['table', 'reason'],
      registers: [registry],
    });
    g.set({ table: 'orders' }, 12.5);
    g.set({ table: 'we"ird\\name\nx' }, -3);
    c.inc({ table: 'orders', reason: 'a,b=c' }, 2);
    const samples = parsePrometheusText(await registry.metrics());
    expect(samples).toEqual([
      { name: 'x_gauge', labels: { table: 'orders' }, value: 12.5 },
      { name: 'x_gauge', labels: { table: 'we"ird\\name\nx' }, value: -3 },
      { name: 'x_total', labels: { table: 'orders', reason: 'a,b=c' }, value: 2 },
    ]);
  });

  it('reads NaN and Inf in any case, as Prometheus does (prom-client writes "Nan")', () => {
    expect(parsePrometheusText('a Nan\nb nan\nc +inf\nd -INF\n').map((s) => s.value)).toEqual([
      NaN,
      NaN,
      Infinity,
      -Infinity,
    ]);
  });

  it('takes timestamps, +Inf/NaN, and skips comments and blank lines', () => {
    expect(
      parsePrometheusText('# HELP a b\n\na 1 1700000000000\nb{le="+Inf"} +Inf\nc NaN\n  d{} 4e3\n').map(
        (s) => [s.name, s.labels, s.value],
      ),
    ).toEqual([
      ['a', {}, 1],
      ['b', { le: '+Inf' }, Infinity],
      ['c', {}, NaN],
      ['d', {}, 4000],
    ]);
  });

  it('names the line of a malformed sample', () => {
    expect(() => parsePrometheusText('a 1\nb{x="1" 2\n')).toThrow(/^line 2: /);
    expect(() => parsePrometheusText('a one\n')).toThrow('line 1: not a sample value: "one"');
    expect(() => parsePrometheusText('<html>\n')).toThrow('line 1: no metric name');
  });
});

describe('assembleStatus', () => {
  const now = Date.parse('2026-12-01T12:00:00Z');
  const orders: TableFacts = {
    table: 'orders',
    ttl: 'ENABLED',
    settings: { policy: { mode: 'dynamodb', attributeName: 'expiresAt' } } as TableFacts['settings'],
    expiryIndex: 'ACTIVE',
    guard: 'ARMED',
    topic: 'ttlstream.remove',
  };
  const carts: TableFacts = { ...orders, table: 'carts', expiryIndex: null, guard: 'PAUSED' };
  const s = (name: string, labels: Record<string, string>, value: number) => ({ name, labels, value });

  it('combines the processes that answered: latest pass, summed backlog, largest lag, archive lag per partition', () => {
    const scanner = {
      url: 'http://scanner:9464/metrics',
      samples: [
        s('ttlstream_scanner_last_pass_timestamp_seconds', { table: 'orders' }, now / 1000 - 30),
        s('ttlstream_scanner_last_pass_timestamp_seconds', { table: 'carts' }, now / 1000 - 5),
      ],
    };
    const producers = [
      {
        url: 'http://p1/metrics',
        samples: [
          s('ttlstream_producer_marks_backlog', { table: 'orders' }, 40),
          s('ttlstream_producer_deletion_lag_seconds', { table: 'orders' }, 1.5),
          s('ttlstream_scanner_last_pass_timestamp_seconds', { table: 'orders' }, now / 1000 - 10),
        ],
      },
      {
        url: 'http://p2/metrics',
        samples: [
          s('ttlstream_producer_marks_backlog', { table: 'orders' }, 2),
          s('ttlstream_producer_deletion_lag_seconds', { table: 'orders' }, 4.25),
          s('ttlstream_producer_marks_backlog', { table: 'other' }, 1000),
        ],
      },
    ];
    const archiver = {
      url: 'http://a/metrics',
      samples: [
        s('ttlstream_archiver_oldest_unarchived_seconds', { topic: 'ttlstream.remove', partition: '0' }, 12),
        s('ttlstream_archiver_oldest_unarchived_seconds', { topic: 'ttlstream.remove', partition: '1' }, 70),
        s('ttlstream_archiver_oldest_unarchived_seconds', { topic: 'elsewhere', partition: '0' }, 999),
        s('ttlstream_archiver_records_behind', { topic: 'ttlstream.remove', partition: '0' }, 3),
        s('ttlstream_archiver_records_behind', { topic: 'ttlstream.remove', partition: '1' }, 4),
      ],
    };
    // A second archiver reporting partition 1 too (during a rebalance): counted once, not twice.
    const archiver2 = {
      url: 'http://a2/metrics',
      samples: [s('ttlstream_archiver_records_behind', { topic: 'ttlstream.remove', partition: '1' }, 4)],
    };
    const report = assembleStatus([orders, carts], [scanner, ...producers, archiver, archiver2], now);
    expect(report.tables[0]).toEqual({
      table: 'orders',
      ttl: 'ENABLED',
      mode: 'dynamodb',
      attribute: 'expiresAt',
      expiryIndex: 'ACTIVE',
      guard: 'ARMED',
      lastPassAt: '2026-12-01T11:59:50.000Z',
      lastPassAgeSeconds: 10,
      marksBacklog: 42,
      deletionLagSeconds: 4.25,
      archiveTopic: 'ttlstream.remove',
      archiveLagSeconds: 70,
      archiveRecordsBehind: 7,
      deleter: 'ttlstream',
      streamLagSeconds: null,
      streamProblem: null,
      streamLoss: null,
      scanFailures: null,
      lastFailure: null,
      failing: false,
    });
    expect(report.tables[1]).toMatchObject({
      table: 'carts',
      guard: 'PAUSED',
      lastPassAgeSeconds: 5,
      marksBacklog: null,
      deletionLagSeconds: null,
    });
    expect(report.sources.every((x) => x.answered)).toBe(true);
  });

  it('a table whose scans fail: the latest failure of any process beside its stale last pass, the failures summed', () => {
    const failure = (at: number, message: string) =>
      s(
        'ttlstream_scanner_last_failure_timestamp_seconds',
        { table: 'orders', service: 'dynamodb', operation: 'ScanCommand', error: 'SyntaxError', message },
        at,
      );
    const scanners = [
      {
        url: 'http://s1/metrics',
        samples: [
          s('ttlstream_scanner_last_pass_timestamp_seconds', { table: 'orders' }, now / 1000 - 1200),
          s('ttlstream_scanner_failures_total', { table: 'orders', operation: 'ScanCommand' }, 17),
          s('ttlstream_scanner_failures_total', { table: 'orders', operation: 'BatchWriteItemCommand' }, 1),
          failure(now / 1000 - 4, 'HTTP 500: Unexpected token \'<\', "<!doctype "... is not valid JSON'),
          // carts failed once, long ago; it has passed since.
          s('ttlstream_scanner_last_pass_timestamp_seconds', { table: 'carts' }, now / 1000 - 5),
          s(
            'ttlstream_scanner_last_failure_timestamp_seconds',
            {
              table: 'carts',
              service: 'dynamodb',
              operation: 'QueryCommand',
              error: 'TimeoutError',
              message: 'x',
            },
            now / 1000 - 600,
          ),
        ],
      },
      { url: 'http://s2/metrics', samples: [failure(now / 1000 - 90, 'older')] },
    ];
    const report = assembleStatus([orders, carts], scanners, now);
    expect(report.tables[0]).toMatchObject({
      lastPassAgeSeconds: 1200,
      scanFailures: 18,
      failing: true,
      lastFailure: {
        at: '2026-12-01T11:59:56.000Z',
        ageSeconds: 4,
        service: 'dynamodb',
        operation: 'ScanCommand',
        error: 'SyntaxError',
        message: 'HTTP 500: Unexpected token \'<\', "<!doctype "... is not valid JSON',
      },
    });
    expect(report.tables[1]).toMatchObject({ failing: false, lastFailure: { operation: 'QueryCommand' } });
    expect(statusRows(report).rows.map((r) => r[6])).toEqual([
      '2026-12-01T11:40:00.000Z (1200 s ago; FAILING, see below)',
      '2026-12-01T11:59:55.000Z (5 s ago)',
    ]);
    expect(failureLines(report)).toEqual([
      'orders: no pass since 2026-12-01T11:40:00.000Z; scans fail: dynamodb ScanCommand SyntaxError: HTTP 500: Unexpected token \'<\', "<!doctype "... is not valid JSON (18 failures, the latest 4 s ago; ttlstream_scanner_failures_total)',
    ]);
    // Never passed at all: failing from the start.
    const never = assembleStatus(
      [orders],
      [{ url: 'http://s/metrics', samples: [failure(now / 1000 - 1, 'm')] }],
      now,
    );
    expect(never.tables[0]).toMatchObject({ lastPassAt: null, failing: true, scanFailures: null });
    expect(statusRows(never).rows[0]?.[6]).toBe('- (FAILING, see below)');
    expect(failureLines(never)[0]).toMatch(
      /^orders: no pass yet; scans fail: dynamodb ScanCommand SyntaxError: m \(- failures/,
    );
  });

  it('a process that did not answer is said per source; the control-table part is still there', () => {
    const report = assembleStatus(
      [orders],
      [{ url: 'http://127.0.0.1:9/metrics', error: 'ECONNREFUSED' }],
      now,
    );
    expect(report.tables[0]).toMatchObject({
      table: 'orders',
      ttl: 'ENABLED',
      guard: 'ARMED',
      lastPassAt: null,
    });
    expect(report.sources).toEqual([
      { url: 'http://127.0.0.1:9/metrics', answered: false, error: 'ECONNREFUSED' },
    ]);
    expect(sourceLines(report)).toEqual([
      'metrics http://127.0.0.1:9/metrics: no answer (ECONNREFUSED): figures from it are missing',
    ]);
    expect(statusRows(report).rows).toEqual([
      [
        'orders',
        'ENABLED',
        'dynamodb',
        'expiresAt',
        'ACTIVE',
        'ARMED',
        '-',
        '-',
        '-',
        '-',
        '-',
        'ttlstream',
        '-',
      ],
    ]);
  });

  it("a table DynamoDB's TTL deletes: the streams role's lag, its stream's problem and an unacknowledged loss", () => {
    const followed: TableFacts = {
      ...orders,
      table: 'sessions',
      settings: { policy: { mode: 'dynamodb', attributeName: 'expiresAt' }, deleter: 'dynamodb' },
    };
    const streams = {
      url: 'http://s/metrics',
      samples: [
        s('ttlstream_streams_lag_seconds', { table: 'sessions' }, 3.25),
        s('ttlstream_streams_problem', { table: 'sessions', problem: 'stream-off' }, 1),
        s('ttlstream_streams_problem', { table: 'sessions', problem: 'no-old-image' }, 0),
        s('ttlstream_streams_loss', { table: 'sessions' }, 1),
      ],
    };
    const report = assembleStatus([followed], [streams], now);
    expect(report.tables[0]).toMatchObject({
      table: 'sessions',
      deleter: 'dynamodb',
      streamLagSeconds: 3.25,
      streamProblem: 'stream-off',
      streamLoss: true,
    });
    expect(statusRows(report).rows[0]?.slice(-2)).toEqual(['dynamodb', '3.3 s']);
    expect(streamNotes(report)).toEqual([
      "table sessions: its stream cannot give DynamoDB's TTL deletions (stream-off): see the streams role's log for the fix",
      'table sessions: records of its stream were lost before they were read (_stream-loss/ in the archive); acknowledge with ttlstream archive ack-loss --table sessions',
    ]);
  });
});

describe('defaultMetricsUrl: where `ttlstream run` with the same configuration serves /metrics', () => {
  const config = (input: ConfigInput) => loadConfig({ env: {}, useStackEndpoints: false, overrides: input });

  it("the API's address, or metrics.port when set (a process without the API role); a wildcard host is asked on loopback", () => {
    expect(defaultMetricsUrl(config({}))).toBe('http://127.0.0.1:8080/metrics');
    expect(defaultMetricsUrl(config({ api: { host: 'ttl.internal', port: 9000 } }))).toBe(
      'http://ttl.internal:9000/metrics',
    );
    expect(defaultMetricsUrl(config({ metrics: { port: 9464 } }))).toBe('http://127.0.0.1:9464/metrics');
    expect(defaultMetricsUrl(config({ api: { host: '0.0.0.0' } }))).toBe('http://127.0.0.1:8080/metrics');
    expect(defaultMetricsUrl(config({ api: { host: '::1' } }))).toBe('http://[::1]:8080/metrics');
  });
});
