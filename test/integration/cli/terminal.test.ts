import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { FsArchiveStorage } from '../../../archive/storage';
import { createDynamoClient } from '../../../core/clients';
import { createTestTable, deleteTestTable, testConfig, uniqueName } from '../../support/stack';
import { Toxiproxy } from '../../support/toxiproxy';
import { freePort, spawnCli } from '../../support/cli-process';
import { removeRow, writeRoll } from '../../support/archive-fixture';
import { nodeArgsFor } from '../../support/entrypoints';

const ROOT = resolve(__dirname, '..', '..', '..');
const sh = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** A tmux server of this test's own (its own socket), so nothing else's sessions are touched. */
class Tmux {
  private readonly socket = uniqueName('ttlstream-tmux');
  constructor(private readonly session = 's') {}
  private tmux(...args: string[]): string {
    return execFileSync('tmux', ['-L', this.socket, ...args], { encoding: 'utf8' });
  }
  start(command: string): void {
    this.tmux('new-session', '-d', '-s', this.session, '-x', '160', '-y', '40', command);
  }
  screen(): string {
    return this.tmux('capture-pane', '-p', '-t', this.session);
  }
  keys(...keys: string[]): void {
    this.tmux('send-keys', '-t', this.session, ...keys);
  }
  /** tmux's own view of the terminal modes the program left: cursor shown, line wrap on. */
  modes(): { cursor: string; wrap: string } {
    const [cursor, wrap] = this.tmux(
      'display-message',
      '-p',
      '-t',
      this.session,
      '#{cursor_flag} #{wrap_flag}',
    )
      .trim()
      .split(' ');
    return { cursor: cursor ?? '', wrap: wrap ?? '' };
  }
  async waitFor(re: RegExp, ms: number): Promise<string> {
    const until = Date.now() + ms;
    for (;;) {
      const s = this.screen();
      if (re.test(s)) return s;
      if (Date.now() > until) throw new Error(`screen never matched ${re}:\n${s}`);
      await sleep(100);
    }
  }
  kill(): void {
    try {
      this.tmux('kill-server');
    } catch {
      // already gone
    }
  }
}

describe('Ctrl-C during restore, in a real terminal (tmux)', () => {
  const source = uniqueName('cli-term-src');
  const dir = mkdtempSync(join(tmpdir(), 'ttlstream-cli-term-'));
  const tmux = new Tmux();
  const toxiproxy = Toxiproxy.ofStack();
  let release: () => void = () => undefined;
  let ddb: DynamoDBClient;
  let target = '';
  let toxic: { proxy: string; name: string } | undefined;

  beforeAll(async () => {
    ddb = createDynamoClient(testConfig());
    target = await createTestTable(ddb, uniqueName('cli-term-dst'));
    const rows = Array.from({ length: 400 }, (_, i) =>
      removeRow({
        table: source,
        keys: { pk: { S: `k${i}` } },
        image: { note: { S: `v${i}` } },
        deletedAtS: 1_700_000_000 + i,
      }),
    );
    await writeRoll(new FsArchiveStorage(dir), rows);
    // Every DynamoDB answer 60 ms late, so the restore is still running when Ctrl-C comes.
    release = await Toxiproxy.lock();
    const proxy = Object.keys(await toxiproxy.proxies()).find((p) => p.includes('dynamo'));
    if (!proxy) throw new Error('no DynamoDB proxy on the stack');
    const t = await toxiproxy.addToxic(
      proxy,
      { type: 'latency', attributes: { latency: 60 } },
      { name: 'cli-term' },
    );
    toxic = { proxy, name: t.name };
  });
  afterAll(async () => {
    tmux.kill();
    if (toxic) await toxiproxy.removeToxic(toxic.proxy, toxic.name);
    release();
    await deleteTestTable(ddb, target);
    ddb.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('restores the cursor and line wrap, prints what was done and that a rerun is safe, exits 130', async () => {
    const env = [
      `TTLSTREAM_ARCHIVE_URL=file://${dir}`,
      `TTLSTREAM_DYNAMODB_ENDPOINT=${Toxiproxy.stackAddresses().dynamodbEndpoint}`,
      'AWS_ACCESS_KEY_ID=x',
      'AWS_SECRET_ACCESS_KEY=x',
    ]
      .map(sh)
      .join(' ');
    const restore = [process.execPath, ...nodeArgsFor('cli'), 'restore', '--table', source]
      .concat(['--target-table', target, '--ttl-attribute', 'expiresAt'])
      .map(sh)
      .join(' ');
    tmux.start(`cd ${sh(ROOT)} && env ${env} ${restore}; echo "EXIT=$?"; sleep 60`);
    await tmux.waitFor(/restore \[.*\| [1-9]\d*\/400/, 60_000);
    tmux.keys('C-c');
    const screen = await tmux.waitFor(/EXIT=\d+/, 20_000);
    expect(screen).toMatch(/EXIT=130/);
    expect(screen).toMatch(/restore interrupted \(SIGINT\) after \d+ of 400 key\(s\)/);
    expect(screen).toContain('a rerun of the same command is safe: restore is idempotent');
    expect(tmux.modes()).toEqual({ cursor: '1', wrap: '1' });
  }, 120_000);
});

describe('ttlstream run whose log reader dies (a real pipe)', () => {
  it('still stops within the shutdown bound on SIGINT', async () => {
    const port = await freePort();
    const child = spawnCli(['run', '--roles', 'api', '--shutdown-timeout', '10s', '--log-level', 'info'], {
      TTLSTREAM_API_PORT: String(port),
      TTLSTREAM_TABLES_CONTROL: uniqueName('cli-epipe-ctl'),
    });
    const watchdog = setTimeout(() => child.kill('SIGKILL'), 60_000);
    try {
      const until = Date.now() + 40_000;
      while (!/running api/.test(child.output()) && Date.now() < until) await sleep(100);
      expect(child.output()).toMatch(/running api/);
      // `… 2>&1 | tee log`, then tee dies: both reading ends close; every later write fails with EPIPE.
      child.stdout?.destroy();
      child.stderr?.destroy();
      const stopAsked = Date.now();
      child.kill('SIGINT');
      const r = await child.result;
      expect(r.signal).toBeNull();
      expect(Date.now() - stopAsked).toBeLessThan(12_000);
    } finally {
      clearTimeout(watchdog);
    }
  }, 90_000);
});
