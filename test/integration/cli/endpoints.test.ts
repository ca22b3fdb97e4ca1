import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeArgsFor } from '../../support/entrypoints';
import { stackStateDir } from '../../support/ports';
import type { CliResult } from '../../support/cli-process';

/** The real `ttlstream` in another working folder, with the harness's local-stack and quiet settings removed. */
function ttlstream(cwd: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  const base: NodeJS.ProcessEnv = { ...process.env, TTLSTREAM_LOG_LEVEL: 'error' };
  delete base.TTLSTREAM_LOCAL_STACK;
  delete base.TTLSTREAM_STATE_DIR;
  delete base.TTLSTREAM_QUIET;
  const started = Date.now();
  const child = spawn(process.execPath, [...nodeArgsFor('cli'), ...args], {
    cwd,
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((done, fail) => {
    child.on('error', fail);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      done({ code, signal, stdout, stderr, ms: Date.now() - started });
    });
  });
}

/**
 * `.ttlstream/endpoints.json` is read only when a local stack is configured, and every command that
 * touches a service says on stderr which endpoints it uses. A command run in a folder that holds a stack's
 * endpoints file (here a copy of the real stack's) but without TTLSTREAM_LOCAL_STACK does not pick it up.
 */
describe('the endpoints file of a local stack, and the "endpoints:" line (real ttlstream, real DynamoDB API)', () => {
  const stack = JSON.parse(readFileSync(join(stackStateDir(), 'endpoints.json'), 'utf8')) as {
    dynamodb: { endpoint: string };
    kafka: { brokers: string[] };
  };
  const elsewhere = mkdtempSync(join(tmpdir(), 'ttlstream-elsewhere-'));
  beforeAll(() => {
    mkdirSync(join(elsewhere, '.ttlstream'));
    copyFileSync(join(stackStateDir(), 'endpoints.json'), join(elsewhere, '.ttlstream', 'endpoints.json'));
  });
  afterAll(() => rmSync(elsewhere, { recursive: true, force: true }));

  const note =
    'note: found .ttlstream/endpoints.json from a local stack; not used because no local stack is configured; set TTLSTREAM_LOCAL_STACK=.ttlstream (or --local-stack .ttlstream) to use it';

  it('not configured: the file is not used (AWS default, said so, with a note); stdout stays JSON', async () => {
    const r = await ttlstream(elsewhere, ['config', '--json'], { TTLSTREAM_REGION: 'eu-west-3' });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).dynamodb.endpoint).toBeUndefined();
    expect(r.stderr.split('\n')).toEqual([
      'endpoints: DynamoDB AWS default for region eu-west-3 (region: TTLSTREAM_REGION); Kafka 127.0.0.1:19092 (default)',
      note,
      '',
    ]);
  });

  it('not configured, endpoint given: a real command names it and its flag, and works; the note once', async () => {
    const r = await ttlstream(
      elsewhere,
      ['--endpoint-url', stack.dynamodb.endpoint, 'ttl', 'list', '--json'],
      {
        AWS_ACCESS_KEY_ID: 'x',
        AWS_SECRET_ACCESS_KEY: 'x',
      },
    );
    expect(r.stderr.split('\n')).toEqual([
      `endpoints: DynamoDB ${stack.dynamodb.endpoint} (--endpoint-url); Kafka 127.0.0.1:19092 (default)`,
      note,
      '',
    ]);
    expect(r.code).toBe(0);
    expect(Array.isArray(JSON.parse(r.stdout))).toBe(true);
  });

  it('configured (TTLSTREAM_LOCAL_STACK or --local-stack): the file is used and named, no note', async () => {
    for (const [args, env, by] of [
      [['ttl', 'list', '--json'], { TTLSTREAM_LOCAL_STACK: '.ttlstream' }, 'TTLSTREAM_LOCAL_STACK'],
      [['--local-stack', '.ttlstream', 'ttl', 'list', '--json'], {}, '--local-stack'],
    ] as const) {
      const r = await ttlstream(elsewhere, [...args], {
        ...env,
        AWS_ACCESS_KEY_ID: 'x',
        AWS_SECRET_ACCESS_KEY: 'x',
      });
      const from = `local stack .ttlstream/endpoints.json, ${by}`;
      expect({ by, stderr: r.stderr }).toEqual({
        by,
        stderr: `endpoints: DynamoDB ${stack.dynamodb.endpoint} (${from}); Kafka ${stack.kafka.brokers.join(',')} (${from})\n`,
      });
      expect(r.code).toBe(0);
      expect(Array.isArray(JSON.parse(r.stdout))).toBe(true);
    }
  });

  it('configured but no stack there: exit 2 naming the variable, not a quiet fall-back to AWS', async () => {
    const r = await ttlstream(elsewhere, ['ttl', 'list'], { TTLSTREAM_LOCAL_STACK: 'no-stack' });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `ttlstream: TTLSTREAM_LOCAL_STACK no-stack: no local stack there (${join(elsewhere, 'no-stack', 'endpoints.json')} not found): start it with \`npm run infra:up\`, or unset TTLSTREAM_LOCAL_STACK to use the configured endpoints\n`,
    );
  });

  it('--quiet: no endpoints line, no note', async () => {
    const r = await ttlstream(elsewhere, ['--quiet', 'config', '--json']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
  });
});
