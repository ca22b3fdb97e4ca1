import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { nodeArgsFor } from './entrypoints';

const ROOT = resolve(__dirname, '..', '..');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** The real `ttlstream` binary (from source through tsx, or built: entrypoints.ts) as a child process. */
export function spawnCli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): ChildProcess & { result: Promise<CliResult>; output(): string } {
  const started = Date.now();
  const child = spawn(process.execPath, [...nodeArgsFor('cli'), ...args], {
    cwd: ROOT,
    env: { ...process.env, TTLSTREAM_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
  const result = new Promise<CliResult>((done, fail) => {
    child.on('error', fail);
    child.on('close', (code, signal) => done({ code, signal, stdout, stderr, ms: Date.now() - started }));
  });
  return Object.assign(child, { result, output: () => stdout + stderr });
}

export function runCli(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 60_000): Promise<CliResult> {
  const child = spawnCli(args, env);
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return child.result.finally(() => clearTimeout(timer));
}

/** Lines of stderr that are not structured logs: what an operator reads. */
export function humanLines(stderr: string): string[] {
  return stderr.split('\n').filter((l) => l.length > 0 && !l.startsWith('{'));
}

/**
 * stderr's lines other than kafkajs's warnings: a broker that has not yet learnt of a topic just created answers
 * a metadata request with UNKNOWN_TOPIC_OR_PARTITION, which kafkajs logs (at warn, core/clients.ts) and retries.
 * Anything else, a security warning above all, is a finding.
 */
export function linesBeyondKafkaRetries(stderr: string): string[] {
  return stderr
    .split('\n')
    .filter((line) => line !== '')
    .filter((line) => {
      try {
        const entry: unknown = JSON.parse(line);
        return !(
          typeof entry === 'object' &&
          entry !== null &&
          'component' in entry &&
          entry.component === 'kafkajs' &&
          'level' in entry &&
          entry.level === 40
        );
      } catch {
        return true;
      }
    });
}

export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => done(port));
    });
  });
}

/**
 * The environment of a `ttlstream run` (and the commands beside it) under test: its own control and marks tables,
 * stream topic, dead-letter topic, archiver group and file-system archive, so suites run side by side; one scan
 * segment, short leases and polls, so a small table is worked off in seconds. `extra` adds or overrides settings.
 */
export function isolatedRunEnv(
  names: { control: string; marks: string; topic: string },
  archiveDir: string,
  extra: NodeJS.ProcessEnv = {},
): NodeJS.ProcessEnv {
  return {
    TTLSTREAM_TABLES_CONTROL: names.control,
    TTLSTREAM_TABLES_MARKS: names.marks,
    TTLSTREAM_TOPICS_SHARED: names.topic,
    TTLSTREAM_TOPICS_DEAD_LETTER: `${names.topic}-dlq`,
    TTLSTREAM_TOPICS_PARTITIONS: '2',
    TTLSTREAM_ARCHIVE_URL: `file://${archiveDir}`,
    TTLSTREAM_ARCHIVE_GROUP_ID: `${names.topic}-archiver`,
    TTLSTREAM_ARCHIVE_ROLL_MS: '500',
    TTLSTREAM_API_TTL_PROPAGATION_MS: '0',
    TTLSTREAM_SCANNER_TOTAL_SEGMENTS: '1',
    TTLSTREAM_SCANNER_PAGE_SIZE: '1000',
    TTLSTREAM_SCANNER_LEASE_MS: '2000',
    TTLSTREAM_SCANNER_PASS_INTERVAL_MS: '200',
    TTLSTREAM_PRODUCER_LEASE_MS: '2000',
    TTLSTREAM_PRODUCER_POLL_MS: '50',
    ...extra,
  };
}
