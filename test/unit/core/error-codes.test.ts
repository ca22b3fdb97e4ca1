import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { renderErrorDocs } from '../../../cli/kit/error-docs';
import { exitCodeFor, EXIT, UsageError } from '../../../cli/kit/exit-codes';
import { RoleStartError } from '../../../cli/kit/run-roles';
import { ERROR_CODES } from '../../../core/error-codes';
import {
  ConfigError,
  DataError,
  LeaseLostError,
  RetryableError,
  TtlstreamError,
  ValidationError,
} from '../../../core/errors';
import { KafkaRequestTimedOut } from '../../../core/reconnecting-producer';
import { isRetryable, withRetry } from '../../../core/retry';

const ROOT = resolve(__dirname, '../../..');
/** Product code: everything we ship, not the tests, benches or build output. */
const SKIP = new Set(['node_modules', 'dist', 'test', 'bench', 'coverage', 'infra', '.ttlstream', '.git']);

function productFiles(dir = ROOT): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return SKIP.has(name) || name.startsWith('.') ? [] : productFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

interface ClassDecl {
  file: string;
  name: string;
  base: string;
  code: string | undefined;
}

/** Every `class X extends Y` of product code, with the code it declares (`static ... code ... = '...'`), if any. */
function classDecls(): ClassDecl[] {
  const out: ClassDecl[] = [];
  for (const path of productFiles()) {
    const text = readFileSync(path, 'utf8');
    const re = /class (\w+) extends (\w+)\s*\{/g;
    for (let m = re.exec(text); m; m = re.exec(text)) {
      const body = text.slice(m.index + m[0].length, m.index + m[0].length + 400);
      const code = /^\s*static (?:override )?readonly code: ErrorCode = '(\w+)';/.exec(body)?.[1];
      out.push({ file: relative(ROOT, path), name: m[1]!, base: m[2]!, code });
    }
  }
  return out;
}

describe('the error tree', () => {
  it('docs/errors.md is up to date with core/error-codes.ts (run `npm run docs:errors` if this fails)', () => {
    const committed = readFileSync(join(ROOT, 'docs', 'errors.md'), 'utf8');
    expect(committed).toBe(renderErrorDocs());
  });

  it('has no class outside core/errors.ts that extends Error directly', () => {
    const direct = classDecls().filter((c) => c.base === 'Error' && c.file !== join('core', 'errors.ts'));
    expect(direct).toEqual([]);
  });

  it('gives each code to exactly the class the table names', () => {
    const declared = classDecls().filter((c) => c.code !== undefined);
    const byCode = new Map<string, string[]>();
    for (const c of declared) byCode.set(c.code!, [...(byCode.get(c.code!) ?? []), c.name]);
    const expected = Object.fromEntries(
      Object.entries(ERROR_CODES).map(([code, info]) => [code, [info.className]]),
    );
    expect(Object.fromEntries(byCode)).toEqual(expected);
  });

  it('stamps name, code and the default retryable flag on each instance', () => {
    const e = new DataError('bad row');
    expect(e).toBeInstanceOf(TtlstreamError);
    expect([e.name, e.code, e.retryable]).toEqual(['DataError', 'TTLSTREAM_DATA', false]);
    const t = new KafkaRequestTimedOut('Produce');
    expect([t.name, t.code, t.retryable]).toEqual([
      'KafkaRequestTimedOut',
      'TTLSTREAM_KAFKA_REQUEST_TIMEOUT',
      true,
    ]);
    expect(new TtlstreamError('x', { retryable: true }).retryable).toBe(true);
    const cause = new Error('socket');
    expect(new RetryableError('x', { cause }).cause).toBe(cause);
    expect('cause' in new RetryableError('x')).toBe(false);
  });
});

describe('retry decisions follow the error', () => {
  it('retries what says it is retryable, and SDK errors by name or $retryable', () => {
    expect(isRetryable(new RetryableError('unprocessed'))).toBe(true);
    expect(isRetryable(new LeaseLostError('gone'))).toBe(false);
    expect(isRetryable(Object.assign(new Error('x'), { name: 'SomeModeledError', $retryable: {} }))).toBe(
      true,
    );
    expect(isRetryable(Object.assign(new Error('x'), { name: 'ValidationException' }))).toBe(false);
    expect(isRetryable(Object.assign(new Error('x'), { name: 'ThrottlingException' }))).toBe(true);
  });

  it('withRetry without a predicate stops at once on a non-retryable TtlstreamError', async () => {
    let calls = 0;
    const fail = (err: Error) => () => {
      calls += 1;
      return Promise.reject(err);
    };
    await expect(
      withRetry(fail(new ValidationError('bad')), { retries: 3, initialDelayMs: 0 }),
    ).rejects.toThrow('bad');
    expect(calls).toBe(1);
    calls = 0;
    await expect(
      withRetry(fail(new RetryableError('again')), { retries: 3, initialDelayMs: 0 }),
    ).rejects.toThrow('again');
    expect(calls).toBe(4);
  });
});

describe('exit codes follow the class', () => {
  const cases: Array<[string, unknown, number]> = [
    ['ConfigError', new ConfigError('x'), EXIT.usage],
    ['UsageError', new UsageError('x'), EXIT.usage],
    ['DataError', new DataError('x'), EXIT.failure],
    ['a role wrapping a ConfigError', new RoleStartError('x', { cause: new ConfigError('y') }), EXIT.usage],
    ['a role wrapping a DataError', new RoleStartError('x', { cause: new DataError('y') }), EXIT.failure],
    ['a plain Error', new Error('x'), EXIT.failure],
  ];
  it.each(cases)('%s', (_, err, exit) => expect(exitCodeFor(err)).toBe(exit));
});
