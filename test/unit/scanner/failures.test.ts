import { DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { Readable } from 'node:stream';
import { countSdkRetries, sdkRequestOf } from '../../../core/clients';
import type { Logger } from '../../../core/logger';
import { labelTable, metrics } from '../../../core/metrics';
import { REPEAT_LOG_MS, ScanFailures, failureFacts } from '../../../scanner/failures';

/** A DynamoDB client whose server answers every request with moto's HTML page for a 500 (one attempt). */
function htmlFiveHundred(): DynamoDBClient {
  const ddb = new DynamoDBClient({
    region: 'us-east-1',
    maxAttempts: 1,
    credentials: { accessKeyId: 'k', secretAccessKey: 's' },
    requestHandler: {
      async handle() {
        return {
          response: {
            statusCode: 500,
            headers: { 'content-type': 'text/html' },
            body: Readable.from([Buffer.from('<!doctype html><title>500 Internal Server Error</title>')]),
          },
        };
      },
    },
  });
  countSdkRetries(ddb, 'dynamodb');
  return ddb;
}

/** A logger that keeps what was logged at warn and info. */
function recording(): { log: Logger; lines: Array<[string, string]> } {
  const lines: Array<[string, string]> = [];
  const log = {
    warn: (_fields: unknown, msg: string) => lines.push(['warn', msg]),
    info: (_fields: unknown, msg: string) => lines.push(['info', msg]),
  } as unknown as Logger;
  return { log, lines };
}

async function failureSeries(table: string) {
  return (await metrics.scannerLastFailure.get()).values.filter((v) => v.labels.table === table);
}
async function failureCount(table: string, operation: string): Promise<number> {
  return (
    (await metrics.scannerFailures.get()).values.find(
      (v) => v.labels.table === table && v.labels.operation === operation,
    )?.value ?? 0
  );
}

describe('what a failed scan says', () => {
  it('names the request that failed and the HTTP status of an answer the SDK could not read', async () => {
    const ddb = htmlFiveHundred();
    const err = await ddb
      .send(new ScanCommand({ TableName: 't', Segment: 0, TotalSegments: 2 }))
      .catch((e: unknown) => e);
    ddb.destroy();
    expect(sdkRequestOf(err)).toEqual({ service: 'dynamodb', operation: 'ScanCommand' });
    const facts = failureFacts(err, 'scan-pass');
    expect(facts).toMatchObject({ service: 'dynamodb', operation: 'ScanCommand', error: 'SyntaxError' });
    expect(facts.message).toMatch(/^HTTP 500: Unexpected token '<'/);
    expect(facts.message).not.toContain('\n');
  });

  it("a failure of ttlstream's own is named by its round, and a long message is cut", () => {
    const facts = failureFacts(new Error(`first line ${'x'.repeat(500)}\nsecond line`), 'index-query');
    expect(facts).toMatchObject({ service: 'ttlstream', operation: 'index-query', error: 'Error' });
    expect(facts.message).toHaveLength(200);
    expect(facts.message.endsWith('…')).toBe(true);
  });
});

describe('ScanFailures', () => {
  it('counts every failure, keeps one last-failure series per table, logs a run of the same failure once a minute', async () => {
    let now = Date.parse('2026-12-01T12:00:00Z');
    const failures = new ScanFailures(() => now);
    const { log, lines } = recording();
    const table = 'failing-table';
    labelTable(table);
    const same = Object.assign(new Error('HTTP 500 page'), { name: 'SyntaxError' });
    // Four segments failing with back-off for two minutes: about twenty failures.
    for (let i = 0; i < 20; i++) {
      failures.failed(table, 'scan-pass', same, log);
      now += 6_000;
    }
    expect(await failureCount(table, 'scan-pass')).toBe(20);
    const series = await failureSeries(table);
    expect(series).toHaveLength(1);
    expect(series[0]?.labels).toMatchObject({
      service: 'ttlstream',
      operation: 'scan-pass',
      error: 'SyntaxError',
    });
    expect(lines.filter(([level]) => level === 'warn')).toEqual([
      ['warn', expect.stringMatching(new RegExp(`^scan-pass of ${table} failed; retrying with back-off`))],
      ['warn', expect.stringMatching(/still failing the same way: 10 more failures \(11 since /)],
    ]);

    // Another failure replaces the series (one per table) and is logged at once.
    failures.failed(table, 'scan-pass', new TypeError('other'), log);
    const replaced = await failureSeries(table);
    expect(replaced.map((v) => v.labels.error)).toEqual(['TypeError']);
    expect(lines.at(-1)?.[1]).toMatch(/failed; retrying/);

    // A pass soon after is no recovery yet (another segment may still fail); a minute without failures is.
    failures.succeeded(table, log);
    expect(lines.at(-1)?.[0]).toBe('warn');
    now += REPEAT_LOG_MS;
    failures.succeeded(table, log);
    expect(lines.at(-1)).toEqual([
      'info',
      expect.stringMatching(new RegExp(`^${table} is read again: 1 failures`)),
    ]);
    failures.succeeded(table, log);
    expect(lines.filter(([level]) => level === 'info')).toHaveLength(1);
  });
});
