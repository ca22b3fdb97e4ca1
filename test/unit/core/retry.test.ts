import { DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { Readable } from 'node:stream';
import { DataError, RetryableError } from '../../../core/errors';
import {
  abortWhen,
  backoffCeilingMs,
  backoffMs,
  isConnectionError,
  isDynamoThrottle,
  isDynamoThrottleOrTransient,
  retryableByFlag,
  watchThrottling,
  withRetry,
} from '../../../core/retry';

const ROOT = resolve(__dirname, '..', '..', '..');

/** What the SDK throws for an error response: the modeled name plus the HTTP status in $metadata. */
function serverError(name: string, httpStatusCode: number): Error {
  return Object.assign(new Error(name), { name, $metadata: { httpStatusCode } });
}

/** What Node's http client throws when no answer arrives. */
function nodeError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code, errno: -111, syscall: 'connect' });
}

describe('DynamoDB error classification', () => {
  const throttles = [
    serverError('ProvisionedThroughputExceededException', 400),
    serverError('ThrottlingException', 400),
    serverError('RequestLimitExceeded', 400),
    serverError('InternalServerError', 500),
    serverError('ServiceUnavailable', 503),
    serverError('SomethingUnmodeled', 429),
    serverError('SomethingUnmodeled', 502),
    Object.assign(new Error('x'), { name: 'ThrottlingException' }), // no $metadata (a hand-made error)
  ];
  const connection = [
    nodeError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:18000'),
    nodeError('ECONNRESET', 'socket hang up'),
    nodeError('ETIMEDOUT', 'connect ETIMEDOUT'),
    nodeError('EPIPE', 'write EPIPE'),
    Object.assign(new Error('Connection timed out after 3000 ms'), { name: 'TimeoutError' }),
    // After the SDK's own attempts it adds $metadata without a status: still no answer from the server.
    Object.assign(nodeError('ECONNREFUSED', 'connect ECONNREFUSED'), { $metadata: { attempts: 6 } }),
  ];
  const wrong = [
    serverError('ValidationException', 400),
    serverError('ConditionalCheckFailedException', 400),
    serverError('ResourceNotFoundException', 400),
    new Error('boom'),
    'ECONNREFUSED',
    null,
    undefined,
  ];

  it.each(throttles.map((e) => [String((e as Error).name), e]))(
    'throttling: %s lowers the rate and is retried',
    (_, e) => {
      expect(isDynamoThrottle(e)).toBe(true);
      expect(isConnectionError(e)).toBe(false);
      expect(isDynamoThrottleOrTransient(e)).toBe(true);
    },
  );

  it.each(connection.map((e) => [(e as Error).message, e]))(
    'no answer: %s is retried but is not throttling',
    (_, e) => {
      expect(isDynamoThrottle(e)).toBe(false);
      expect(isConnectionError(e)).toBe(true);
      expect(isDynamoThrottleOrTransient(e)).toBe(true);
    },
  );

  it.each(wrong.map((e) => [String(e instanceof Error ? e.name : e), e]))(
    'a wrong request (%s) is neither',
    (_, e) => {
      expect(isDynamoThrottle(e)).toBe(false);
      expect(isConnectionError(e)).toBe(false);
      expect(isDynamoThrottleOrTransient(e)).toBe(false);
    },
  );

  it('a transaction conflict is retried without slowing down', () => {
    const e = serverError('TransactionConflictException', 400);
    expect(isDynamoThrottleOrTransient(e)).toBe(true);
    expect(isDynamoThrottle(e)).toBe(false);
  });
});

describe('watchThrottling sees the attempts the SDK retries on its own', () => {
  type Step = 'refused' | 'throttled' | 'ok';

  /** A DynamoDB client whose HTTP layer plays `steps`, one per attempt; no server involved. */
  function clientFor(steps: Step[]): DynamoDBClient {
    const queue = [...steps];
    const respond = (statusCode: number, body: unknown) => ({
      response: {
        statusCode,
        reason: '',
        headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'test' },
        body: Readable.from([Buffer.from(JSON.stringify(body))]),
      },
    });
    return new DynamoDBClient({
      region: 'us-east-1',
      endpoint: 'http://127.0.0.1:1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      maxAttempts: 4,
      requestHandler: {
        handle: async () => {
          const step = queue.shift() ?? 'ok';
          if (step === 'refused') throw nodeError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:18000');
          if (step === 'throttled')
            return respond(400, {
              __type: 'com.amazonaws.dynamodb.v20120810#ThrottlingException',
              message: 'Rate of requests exceeds the allowed throughput.',
            });
          return respond(200, { Items: [], Count: 0, ScannedCount: 0 });
        },
      },
    });
  }

  async function scan(steps: Step[]) {
    const seen: unknown[] = [];
    const out = await clientFor(steps).send(
      watchThrottling(new ScanCommand({ TableName: 't' }), (err) => seen.push(err)),
    );
    return { attempts: out.$metadata.attempts, seen };
  }

  it('a refused connection retried by the SDK is not reported as throttling', async () => {
    const { attempts, seen } = await scan(['refused', 'refused', 'ok']);
    expect(attempts).toBe(3);
    expect(seen).toEqual([]);
  });

  it('a throttled attempt is reported, once per throttled attempt', async () => {
    const { attempts, seen } = await scan(['refused', 'throttled', 'ok']);
    expect(attempts).toBe(3);
    expect(seen).toHaveLength(1);
    expect((seen[0] as Error).name).toBe('ThrottlingException');
  });

  it('a request that never needed a retry reports nothing', async () => {
    const { attempts, seen } = await scan(['ok']);
    expect(attempts).toBe(1);
    expect(seen).toEqual([]);
  });
});

describe('the back-off', () => {
  const backoff = { initialDelayMs: 250, maxDelayMs: 10_000 };

  it('doubles from the initial delay up to the cap, for any number of attempts', () => {
    expect([0, 1, 2, 3, 4, 5, 6].map((a) => backoffCeilingMs(a, backoff))).toEqual([
      250, 500, 1000, 2000, 4000, 8000, 10_000,
    ]);
    expect(backoffCeilingMs(10_000, backoff)).toBe(10_000);
    expect(backoffCeilingMs(10_000, { initialDelayMs: 0, maxDelayMs: 10 })).toBe(0);
  });

  it('waits a uniform share of the ceiling (full jitter)', () => {
    expect(backoffMs(3, backoff, () => 0)).toBe(0);
    expect(backoffMs(3, backoff, () => 0.5)).toBe(1000);
    for (let i = 0; i < 200; i++) {
      const wait = backoffMs(i % 8, backoff);
      expect(wait).toBeGreaterThanOrEqual(0);
      expect(wait).toBeLessThan(backoffCeilingMs(i % 8, backoff));
    }
  });
});

describe('withRetry', () => {
  const fast = { initialDelayMs: 1, maxDelayMs: 2 };

  it('retries without bound until the call succeeds', async () => {
    const seen: number[] = [];
    const out = await withRetry(
      async (attempt) => {
        seen.push(attempt);
        if (attempt < 30) throw new Error('not yet');
        return 'done';
      },
      { ...fast, retries: Infinity },
    );
    expect(out).toBe('done');
    expect(seen).toHaveLength(31);
  });

  it('stops at the first non-retryable error and rethrows it, code and all', async () => {
    let calls = 0;
    const failing = withRetry(
      async () => {
        calls++;
        throw calls < 3 ? new RetryableError('busy') : new DataError('a corrupt row');
      },
      { ...fast, retries: Infinity },
    );
    await expect(failing).rejects.toMatchObject({ code: 'TTLSTREAM_DATA' });
    expect(calls).toBe(3);
    expect(retryableByFlag(new DataError('x'))).toBe(false);
    expect(retryableByFlag(new RetryableError('x'))).toBe(true);
    expect(retryableByFlag(new Error('unknown'))).toBe(true);
  });

  it('gives up after `retries` retries with the last error', async () => {
    let calls = 0;
    const failing = withRetry(
      async () => {
        throw new Error(`failure ${++calls}`);
      },
      { ...fast, retries: 2 },
    );
    await expect(failing).rejects.toThrow('failure 3');
  });

  it('an abort during the wait rethrows the failure at once', async () => {
    const controller = new AbortController();
    const started = Date.now();
    const failing = withRetry(
      async () => {
        setTimeout(() => controller.abort(), 20);
        throw new Error('down');
      },
      { retries: Infinity, initialDelayMs: 60_000, maxDelayMs: 60_000, signal: controller.signal },
    );
    // The random wait may be short: whatever it is, the loop ends with the failure soon after the abort.
    await expect(failing).rejects.toThrow('down');
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(controller.signal.aborted).toBe(true);
  });

  it('abortWhen turns a state flag into a signal, within one look', async () => {
    let done = false;
    const { signal, stop } = abortWhen(() => done, 10);
    expect(signal.aborted).toBe(false);
    done = true;
    await new Promise((resolve) => signal.addEventListener('abort', resolve));
    expect(signal.aborted).toBe(true);
    stop();
    expect(abortWhen(() => true).signal.aborted).toBe(true);
  });
});

describe('one back-off: npm run lint refuses a hand-written one outside core/retry.ts', () => {
  /** The rule ids eslint (with the repo's eslint.config.mjs) reports for each `[path, source]`. */
  function lint(files: Array<[string, string]>): string[][] {
    const script = `
      const { ESLint } = require('eslint');
      (async () => {
        const eslint = new ESLint();
        const out = [];
        for (const [filePath, code] of JSON.parse(process.argv[1])) {
          const [result] = await eslint.lintText(code, { filePath });
          out.push(result.messages.map((m) => m.ruleId));
        }
        process.stdout.write(JSON.stringify(out));
      })();`;
    const run = spawnSync(process.execPath, ['-e', script, JSON.stringify(files)], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    if (run.status !== 0) throw new Error(run.stderr);
    return JSON.parse(run.stdout) as string[][];
  }

  it('flags 2 ** n, Math.pow, 1 << n and *= 2 in product code, not powers of two of a constant', () => {
    const doubling = [
      'export const wait = (n: number): number => Math.min(30_000, 500 * 2 ** Math.min(n, 6));\n',
      'export const wait = (n: number): number => 100 * Math.pow(2, n);\n',
      'export const wait = (n: number): number => 100 * (1 << n);\n',
      'export function wait(): number {\n  let delay = 100;\n  delay *= 2;\n  return delay;\n}\n',
    ];
    const found = lint([
      ...doubling.map((code): [string, string] => ['scanner/doubling.ts', code]),
      ['schemas/limits.ts', 'export const MAX_ID = 2 ** 31 - 1;\n'],
      ['core/retry.ts', doubling[0] as string],
    ]);
    expect(found).toEqual([
      ['no-restricted-syntax'],
      ['no-restricted-syntax'],
      ['no-restricted-syntax'],
      ['no-restricted-syntax'],
      [],
      [],
    ]);
  });

  it('flags a wait grown by hand (delay * 2, delay += n, a sleep computed from the try counter), not a fixed poll', () => {
    const grown = [
      'export function next(delay: number): number {\n  return Math.min(delay * 2, 1000);\n}\n',
      'export function next(): number {\n  let delay = 100;\n  delay += 100;\n  return delay;\n}\n',
      "import { setTimeout as sleep } from 'node:timers/promises';\nexport const wait = (attempt: number) => sleep(100 * (attempt + 1));\n",
    ];
    const found = lint([
      ...grown.map((code): [string, string] => ['cli/demo/grown.ts', code]),
      ...grown.map((code): [string, string] => ['test/support/grown.ts', code]),
      [
        'core/poll.ts',
        "import { setTimeout as sleep } from 'node:timers/promises';\nexport const poll = () => sleep(100);\n",
      ],
    ]);
    expect(found).toEqual([...grown, ...grown].map(() => ['no-restricted-syntax']).concat([[]]));
  });

  it("refuses DynamoDB's unprocessed items and keys in the product outside pipeline/ddb-batch.ts", () => {
    const follows = [
      'export const left = (out: { UnprocessedItems?: object }) => out.UnprocessedItems ?? {};\n',
      'export const left = (out: { UnprocessedKeys?: object }) => {\n  const { UnprocessedKeys } = out;\n  return UnprocessedKeys;\n};\n',
    ];
    const found = lint([
      ...follows.map((code): [string, string] => ['control/reads.ts', code]),
      ...follows.map((code): [string, string] => ['pipeline/ddb-batch.ts', code]),
      ...follows.map((code): [string, string] => ['test/integration/seed.ts', code]),
    ]);
    expect(found).toEqual([['no-restricted-syntax'], ['no-restricted-syntax'], [], [], [], []]);
  });
});
