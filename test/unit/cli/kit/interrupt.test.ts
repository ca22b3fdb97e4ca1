import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsArchiveStorage } from '../../../../archive/storage';
import { CliContext } from '../../../../cli/kit/context';
import { signalExitCode } from '../../../../cli/kit/interrupt';
import { runCli } from '../../../../cli/program';
import { fakeIo } from '../../../support/cli';
import { removeRow, writeRoll } from '../../../support/archive-fixture';

const SHOW_CURSOR = '\u001b[?25h';
const HIDE_CURSOR = '\u001b[?25l';
const WRAP_ON = '\u001b[?7h';

describe('logs while a progress bar is shown', () => {
  it('a log line goes above the bar on a cleared line, never into it, and the bar is drawn again below', () => {
    const io = fakeIo({ tty: true });
    const ctx = new CliContext(io, {});
    const bar = ctx.progress('replay');
    bar.update(3, 10);
    const before = io.stderr.text.length;
    ctx.logger.warn('a kafkajs warning');
    const after = io.stderr.text.slice(before);
    expect(after.startsWith('\r\u001b[2K{')).toBe(true);
    const [logLine, rest] = after.slice('\r\u001b[2K'.length).split('\n');
    expect(JSON.parse(logLine as string)).toMatchObject({ level: 40, msg: 'a kafkajs warning' });
    expect(rest).toContain('replay [');
    bar.stop();
    // After the bar, logs are plain lines again.
    const end = io.stderr.text.length;
    ctx.logger.warn('later');
    expect(io.stderr.text.slice(end).startsWith('{')).toBe(true);
  });

  it('stop() restores the cursor and line wrap, and a second stop writes nothing', () => {
    const io = fakeIo({ tty: true });
    const bar = new CliContext(io, {}).progress('restore');
    bar.update(1, 2);
    expect(io.stderr.text).toContain(HIDE_CURSOR);
    bar.stop();
    expect(io.stderr.text).toContain(SHOW_CURSOR);
    expect(io.stderr.text).toContain(WRAP_ON);
    const len = io.stderr.text.length;
    bar.stop();
    expect(io.stderr.text.length).toBe(len);
  });
});

describe('SIGINT during restore', () => {
  // A DynamoDB endpoint that describes the table, then never answers a write: the restore hangs
  // mid-flight, bar shown, until the signal. (A unit test: the real API is in the integration tests.)
  let server: Server;
  const pending: ServerResponse[] = [];
  let endpoint: string;
  const dir = mkdtempSync(join(tmpdir(), 'ttlstream-interrupt-'));

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      req.resume();
      if (String(req.headers['x-amz-target']).endsWith('.DescribeTable')) {
        res.setHeader('content-type', 'application/x-amz-json-1.0');
        res.end(
          JSON.stringify({
            Table: {
              TableName: 'orders',
              TableStatus: 'ACTIVE',
              KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
              AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
            },
          }),
        );
      } else pending.push(res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const a = server.address();
    endpoint = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
    await writeRoll(new FsArchiveStorage(dir), [
      removeRow({ table: 'orders', keys: { pk: { S: 'a' } }, image: {}, deletedAtS: 1_700_000_000 }),
      removeRow({ table: 'orders', keys: { pk: { S: 'b' } }, image: {}, deletedAtS: 1_700_000_001 }),
    ]);
  });
  afterAll(async () => {
    for (const s of pending) s.socket?.destroy();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  /** A restore stopped mid-flight by `stop` (default: Ctrl-C). */
  async function interruptedRestore(
    extra: string[],
    tty: boolean,
    stop: (io: ReturnType<typeof fakeIo>) => void = () => void process.emit('SIGINT', 'SIGINT'),
  ) {
    const io = fakeIo({
      tty,
      env: {
        TTLSTREAM_DYNAMODB_ENDPOINT: endpoint,
        TTLSTREAM_ARCHIVE_URL: `file://${dir}`,
        AWS_ACCESS_KEY_ID: 'x',
        AWS_SECRET_ACCESS_KEY: 'x',
      },
    });
    const running = runCli(['restore', '-t', 'orders', '--ttl-attribute', 'expiresAt', ...extra], io);
    // Until a request of this run is in flight (and, on a terminal, the bar is shown).
    const connected = pending.length;
    const inFlight = (): boolean =>
      pending.length > connected && (!tty || io.stderr.text.includes(HIDE_CURSOR));
    for (let i = 0; i < 400 && !inFlight(); i++) await new Promise((r) => setTimeout(r, 25));
    expect(inFlight()).toBe(true);
    stop(io);
    return { code: await running, io };
  }

  it('restores the terminal, says how far it got and that a rerun is safe, exits 130', async () => {
    const { code, io } = await interruptedRestore([], true);
    expect(code).toBe(130);
    expect(signalExitCode('SIGINT')).toBe(130);
    expect(io.stderr.text).toContain(SHOW_CURSOR);
    expect(io.stderr.text.lastIndexOf(SHOW_CURSOR)).toBeGreaterThan(io.stderr.text.lastIndexOf(HIDE_CURSOR));
    expect(io.stdout.text).toMatch(/^restore interrupted \(SIGINT\) after 0 of 2 key\(s\)/);
    expect(io.stdout.text).toContain('a rerun of the same command is safe: restore is idempotent');
  }, 20_000);

  it('--json: one JSON object saying so', async () => {
    const { code, io } = await interruptedRestore(['--json'], false);
    expect(code).toBe(130);
    expect(JSON.parse(io.stdout.text)).toMatchObject({ interrupted: 'SIGINT', command: 'restore', done: 0 });
  }, 20_000);

  const readerLeaves = (io: ReturnType<typeof fakeIo>): void =>
    io.stdout.fail(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));

  it("stdout's reader leaving (| head) stops it as Ctrl-C does: what was done said on stderr, exit 141", async () => {
    const { code, io } = await interruptedRestore([], false, readerLeaves);
    expect(code).toBe(141);
    expect(signalExitCode('SIGPIPE')).toBe(141);
    expect(io.stdout.text).toBe('');
    expect(io.stderr.text).toMatch(
      /^restore interrupted \(SIGPIPE: the reader of stdout left\) after 0( of 2)? key\(s\): each one restored or skipped/m,
    );
    expect(io.stderr.text).toContain('a rerun of the same command is safe');
  }, 20_000);

  it('a dry run whose reader left ends without a word: it wrote nothing', async () => {
    const { code, io } = await interruptedRestore(['--dry-run'], false, readerLeaves);
    expect(code).toBe(141);
    expect(io.stdout.text).toBe('');
    expect(io.stderr.text).not.toContain('interrupted');
  }, 20_000);
});
