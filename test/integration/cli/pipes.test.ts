import { BatchWriteItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { createDynamoClient, createKafka } from '../../../core/clients';
import { silentLogger } from '../../../core/logger';
import { archiveRows, MemoryStorage, tableRows } from '../../support/archive-fixture';
import { nodeArgsFor } from '../../support/entrypoints';
import { filesUnder } from '../../support/files';
import { ROOT_DIR } from '../../support/ports';
import {
  createTestTable,
  createTestTopic,
  deleteTestTable,
  testConfig,
  uniqueName,
} from '../../support/stack';
import { dynamodbTtl } from '../../support/ttl-settings';
import { TtlSettingsStore, settingsStoreOptionsFrom } from '../../../control/settings-store';

/**
 * What a command prints arrives whole whatever stdout is. Each command that can print a lot runs three times as a
 * child of bash, as a user runs it: `> file`, `| cat > file` (a pipe to another process, filled faster than it is
 * read), and `| head -c 100` (a reader that leaves). The piped bytes must equal the file's, with the same exit code;
 * the early reader must end the command with SIGPIPE's status (141) and no stack trace. The outputs are made larger
 * than a pipe's 64 KiB buffer (≥ 1 MiB where the command can print that much from a test-sized archive or table).
 */

const SIGPIPE_STATUS = 141;
const MIB = 1024 * 1024;
const QUERY = 'select event_id, item from deletions order by event_id';
/** The deletions of the fixture archives, and more. */
const WINDOW = ['--from', '2026-11-02T00:00Z', '--to', '2026-11-03T00:00Z'];
const MANY_TABLES = Array.from({ length: 3000 }, (_, i) => `table${String(i).padStart(5, '0')}`).join(',');

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Runs `script` in bash; resolves with its stdout (the statuses it echoes) once it has ended. */
function bash(script: string, env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((done, fail) => {
    const child = spawn('bash', ['-c', script], { cwd: ROOT_DIR, env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.on('error', fail);
    child.on('close', (code) =>
      code === 0 ? done(out) : fail(new Error(`bash exited ${code}: ${script.slice(0, 300)}`)),
    );
  });
}

/** '' when the two are the same bytes, else where they first differ, with some context of each. */
function firstDifference(a: Buffer, b: Buffer): string {
  if (a.equals(b)) return '';
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i += 1;
  const around = (x: Buffer) => JSON.stringify(x.subarray(Math.max(0, i - 80), i + 80).toString());
  return `at byte ${i} of ${a.length} and ${b.length}: ${around(a)} against ${around(b)}`;
}

interface Delivered {
  code: number;
  stdout: Buffer;
  stderr: string;
}

describe('command output through a pipe arrives whole (real stack, file archives)', () => {
  const work = mkdtempSync(join(tmpdir(), 'ttlstream-pipes-'));
  const avroDir = join(work, 'avro');
  const parquetDir = join(work, 'parquet');
  const table = uniqueName('pipes');
  const control = uniqueName('pipes-ctl');
  const topic = uniqueName('pipes-replay');
  const base = Date.UTC(2026, 10, 2, 10) / 1000;
  let ddb: DynamoDBClient;
  let env: NodeJS.ProcessEnv;
  let bigAvroFile = '';
  const cli = [process.execPath, ...nodeArgsFor('cli')].map(shellQuote).join(' ');

  /** The archive, built in memory by the archiver's own partition worker, then laid out as files. */
  async function writeArchive(
    dir: string,
    parts: Array<Parameters<typeof archiveRows>[2]>,
    format: 'avro' | 'parquet',
    perRoll: number[],
  ): Promise<void> {
    const memory = new MemoryStorage();
    let first = 0n;
    for (const [i, rows] of parts.entries()) {
      await archiveRows(memory, 't', rows, { perRoll: perRoll[i] ?? 1, first, format });
      first += BigInt(rows.length);
    }
    for (const [path, body] of memory.objects) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), body);
    }
  }

  beforeAll(async () => {
    // Avro: 4,000 records of `table` with 300-byte payloads, in files of about 1 MB (the partition worker's roll size
    // here); then 3,500 rolls of one small record each of another table, so that `archive ls` prints over 1 MiB while
    // the commands on `table` read few files.
    await writeArchive(
      avroDir,
      [tableRows(table, 4000, base, 1, 300), tableRows(`${table}-many`, 3500, base + 7200, 1, 20, 4000)],
      'avro',
      [4000, 1],
    );
    // The largest Avro data file, as `archive show` takes it: relative to the archive root.
    const avroFiles = filesUnder(avroDir).filter((f) => f.endsWith('.avro'));
    const largest = avroFiles.reduce((a, f) => (statSync(f).size > statSync(a).size ? f : a));
    bigAvroFile = relative(avroDir, largest);
    await writeArchive(parquetDir, [tableRows(table, 4000, base, 1, 400)], 'parquet', [1000]);
    ddb = createDynamoClient(testConfig());
    await createTestTable(ddb, table, { hashKey: 'pk', rangeKey: 'sk', rangeType: 'N' });
    // Items for preview: half expired, half expiring within the hour.
    const nowS = Math.floor(Date.now() / 1000);
    for (let i = 0; i < 400; i += 25)
      await ddb.send(
        new BatchWriteItemCommand({
          RequestItems: {
            [table]: Array.from({ length: 25 }, (_, j) => ({
              PutRequest: {
                Item: {
                  pk: { S: `live-${i + j}` },
                  sk: { N: '1' },
                  expiresAt: { N: String((i + j) % 2 === 0 ? nowS - 60 : nowS + 600) },
                },
              },
            })),
          },
        }),
      );
    const admin = createKafka(testConfig(), silentLogger).admin();
    await admin.connect();
    try {
      await createTestTopic(admin, topic, 1);
    } finally {
      await admin.disconnect();
    }
    env = {
      ...process.env,
      TTLSTREAM_LOG_LEVEL: 'warn',
      TTLSTREAM_ARCHIVE_URL: `file://${avroDir}`,
      TTLSTREAM_TABLES_CONTROL: control,
    };
    const store = new TtlSettingsStore(ddb, settingsStoreOptionsFrom(testConfig({ tables: { control } })));
    await store.update(table, { enabled: true, settings: dynamodbTtl('expiresAt') }, 'test');
  });

  afterAll(async () => {
    for (const t of [table, control]) await deleteTestTable(ddb, t);
    ddb.destroy();
    rmSync(work, { recursive: true, force: true });
  });

  /** The command's stdout and status with stdout a file, then through `| cat`. */
  async function delivered(args: string[]): Promise<{ file: Delivered; pipe: Delivered }> {
    const line = `${cli} ${args.map(shellQuote).join(' ')}`;
    const f = (name: string) => shellQuote(join(work, name));
    const statuses = await bash(
      `${line} > ${f('out.file')} 2> ${f('err.file')}; echo $?; ` +
        `set -o pipefail; ${line} 2> ${f('err.pipe')} | cat > ${f('out.pipe')}; echo $?`,
      env,
    );
    const [fileCode, pipeCode] = statuses.trim().split('\n').map(Number);
    const read = (name: string) => readFileSync(join(work, name));
    return {
      file: { code: fileCode ?? -1, stdout: read('out.file'), stderr: read('err.file').toString() },
      pipe: { code: pipeCode ?? -1, stdout: read('out.pipe'), stderr: read('err.pipe').toString() },
    };
  }

  /** The command with `| head -c 100`: its status, what head got, and its stderr. */
  async function cutShort(args: string[]): Promise<{ code: number; got: number; stderr: string }> {
    const line = `${cli} ${args.map(shellQuote).join(' ')}`;
    const f = (name: string) => shellQuote(join(work, name));
    const out = await bash(
      `${line} 2> ${f('err.head')} | head -c 100 > ${f('out.head')}; echo \${PIPESTATUS[0]}`,
      env,
    );
    return {
      code: Number(out.trim()),
      got: readFileSync(join(work, 'out.head')).length,
      stderr: readFileSync(join(work, 'err.head')).toString(),
    };
  }

  /**
   * Each command, the least it prints here, its status, and the parts of its output that name the moment it ran
   * (masked before the two runs' bytes are compared).
   */
  const cases: Array<{
    name: string;
    args: () => string[];
    minBytes: number;
    code?: number;
    clock?: RegExp;
  }> = [
    {
      name: 'archive query (table)',
      args: () => [
        'archive',
        'query',
        '--archive',
        `file://${parquetDir}`,
        'select event_id, key_pk, item from deletions order by event_id',
      ],
      minBytes: MIB,
    },
    {
      name: 'archive query --json',
      args: () => [
        'archive',
        'query',
        '--archive',
        `file://${parquetDir}`,
        '--json',
        'select event_id, key_pk, item from deletions order by event_id',
      ],
      minBytes: MIB,
    },
    {
      name: 'archive query --csv',
      args: () => [
        'archive',
        'query',
        '--archive',
        `file://${parquetDir}`,
        '--csv',
        'select event_id, key_pk, item from deletions order by event_id',
      ],
      minBytes: MIB,
    },
    {
      name: 'archive query --json over Avro files',
      // The hour of the large Avro files only: its 3,500 small files would each be converted.
      args: () => ['archive', 'query', '--json', '--until', '2026-11-02T11:00Z', QUERY],
      minBytes: MIB,
    },
    {
      name: 'archive show <file> --json',
      args: () => ['archive', 'show', bigAvroFile, '--json', '--limit', '1000000'],
      minBytes: 800 * 1024,
    },
    {
      name: 'archive show <file>',
      args: () => ['archive', 'show', bigAvroFile, '--limit', '1000000'],
      minBytes: 512 * 1024,
    },
    {
      name: 'archive show --table --json',
      args: () => ['archive', 'show', '--table', table, '--json', '--limit', '1000000'],
      minBytes: MIB,
    },
    { name: 'archive ls --json', args: () => ['archive', 'ls', '--json'], minBytes: MIB },
    { name: 'archive ls', args: () => ['archive', 'ls'], minBytes: 512 * 1024 },
    {
      name: 'audit --json',
      args: () => ['audit', '--table', table, ...WINDOW, '--json'],
      minBytes: MIB,
      clock: /"evaluatedAt":"[^"]+"/g,
    },
    { name: 'audit --csv', args: () => ['audit', '--table', table, ...WINDOW, '--csv'], minBytes: MIB },
    {
      name: 'restore --dry-run --json',
      args: () => ['restore', '--table', table, ...WINDOW, '--dry-run', '--json'],
      minBytes: MIB,
    },
    {
      name: 'replay --dry-run',
      args: () => ['replay', '--table', table, ...WINDOW, '--topic', topic, '--dry-run'],
      minBytes: 256 * 1024,
    },
    {
      name: 'replay --dry-run --json',
      args: () => ['replay', '--table', table, ...WINDOW, '--topic', topic, '--dry-run', '--json'],
      minBytes: MIB,
    },
    {
      name: 'preview --json',
      args: () => ['preview', '--table', table, '--json'],
      minBytes: 1,
      clock: /"evaluatedAt": \d+/g,
    },
    {
      name: 'status --json',
      args: () => ['status', '--json', '--metrics-timeout', '200'],
      minBytes: 1,
      code: 1,
      clock: /"at": "[^"]+"/g,
    },
    {
      name: 'schemas export --json',
      args: () => ['schemas', 'export', '--dir', join(work, 'schemas'), '--json'],
      minBytes: 1,
    },
    { name: 'config', args: () => ['config'], minBytes: 1 },
    { name: 'config --json', args: () => ['config', '--json'], minBytes: 1 },
    {
      name: 'iam-policy (3,000 tables)',
      args: () => ['iam-policy', '--roles', 'scanner', '--tables', MANY_TABLES],
      minBytes: 256 * 1024,
    },
    { name: 'api openapi', args: () => ['api', 'openapi'], minBytes: 48 * 1024 },
  ];

  it.each(cases)(
    '$name: the same bytes and status through a pipe as to a file',
    async ({ args, minBytes, code, clock }) => {
      const { file, pipe } = await delivered(args());
      expect(file.code).toBe(code ?? 0);
      expect(file.stdout.length).toBeGreaterThanOrEqual(minBytes);
      expect(pipe.code).toBe(file.code);
      const masked = (b: Buffer) => (clock ? Buffer.from(b.toString().replace(clock, '<clock>')) : b);
      if (clock) expect(file.stdout.toString()).toMatch(clock);
      expect(firstDifference(masked(pipe.stdout), masked(file.stdout))).toBe('');
      expect(pipe.stdout.length).toBe(file.stdout.length);
    },
  );

  // Output that fits in the pipe (64 KiB) and head's read is written whole before head leaves: the command succeeds, as
  // `echo hi | head -c 1` does. Anything larger meets the closed pipe: SIGPIPE's status.
  it.each(cases)(
    '$name | head -c 100: ends quietly, 141 when cut short',
    async ({ args, minBytes, code }) => {
      const r = await cutShort(args());
      expect(r.got).toBe(100);
      if (minBytes >= 256 * 1024) expect(r.code).toBe(SIGPIPE_STATUS);
      else expect([code ?? 0, SIGPIPE_STATUS]).toContain(r.code);
      expect(r.stderr).not.toMatch(/EPIPE|at .*\.js:\d+|Error:/);
    },
  );
});
