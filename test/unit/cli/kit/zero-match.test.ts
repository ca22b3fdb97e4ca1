import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { FsArchiveStorage } from '../../../../archive/storage';
import { explainNoMatch } from '../../../../cli/kit/zero-match';
import { cli } from '../../../support/cli';
import { removeRow, writeRoll } from '../../../support/archive-fixture';

/** A file archive holding two deletions of `orders` (key pk S + sk N); no service is needed. */
describe('nothing matched: said, explained, and --fail-if-empty for scripts', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ttlstream-zero-'));
  const storage = new FsArchiveStorage(dir);
  const env = { TTLSTREAM_ARCHIVE_URL: `file://${dir}` };
  const keys = (pk: string) => ({ pk: { S: pk }, sk: { N: '1' } });

  beforeAll(async () => {
    await writeRoll(storage, [
      removeRow({ table: 'orders', keys: keys('o#1'), deletedAtS: 1_700_000_000 }),
      removeRow({ table: 'orders', keys: keys('o#2'), deletedAtS: 1_700_000_100 }),
    ]);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('an unknown table: says which tables the archive has', async () => {
    expect(await explainNoMatch(storage, { table: 'order' })).toBe(
      `the archive at file://${dir} holds no records of table order (it has: orders)`,
    );
  });

  it('a key of the wrong name or type names the archived key schema', async () => {
    expect(await explainNoMatch(storage, { table: 'orders', key: { id: { S: 'o#1' } } })).toBe(
      "key id (S) cannot match: orders's archived keys are pk (S), sk (N)",
    );
    expect(
      await explainNoMatch(storage, { table: 'orders', key: { pk: { S: 'o#1' }, sk: { S: '1' } } }),
    ).toBe("key pk (S), sk (S) cannot match: orders's archived keys are pk (S), sk (N)");
    expect(await explainNoMatch(storage, { table: 'orders', key: keys('o#9') })).toBe(
      'no archived deletion of that key of orders (keys are pk (S), sk (N))',
    );
  });

  it('archive show --table <unknown>: 0 records, the hint on stderr, exit 0; with --fail-if-empty exit 3', async () => {
    const r = await cli(['archive', 'show', '--table', 'order'], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('0 record(s)\n');
    expect(r.stderr).toBe(
      `ttlstream: nothing matched: the archive at file://${dir} holds no records of table order (it has: orders)\n`,
    );
    const strict = await cli(['archive', 'show', '--table', 'order', '--fail-if-empty'], env);
    expect(strict.code).toBe(3);
    const lines = await cli(['archive', 'show', '--table', 'orders', '--output', 'json'], env);
    // A record listing is JSON lines: one object per record.
    const objects = lines.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { eventID: string });
    expect(objects).toHaveLength(2);
    expect(objects.every((o) => typeof o.eventID === 'string')).toBe(true);
    const found = await cli(['archive', 'show', '--table', 'orders', '--fail-if-empty'], env);
    expect(found.code).toBe(0);
    expect(found.stderr).toBe('');
  });

  it('archive show --key with the wrong key name explains the key schema', async () => {
    const r = await cli(['archive', 'show', '--table', 'orders', '--key', '{"id":{"S":"o#1"}}'], env);
    expect(r.stderr).toContain("cannot match: orders's archived keys are pk (S), sk (N)");
  });

  it('an archive root that does not exist is refused (exit 2), for every command that reads the archive', async () => {
    const missing = join(dir, 'no-such-folder');
    for (const args of [
      ['archive', 'ls'],
      ['archive', 'show', '--table', 'orders'],
      ['restore', '--table', 'orders', '--ttl-attribute', 'exp', '--dry-run'],
      ['replay', '--table', 'orders', '--from', '2023-01-01', '--to', '2024-01-01', '--topic', 't'],
    ]) {
      const r = await cli([...args, '--archive', `file://${missing}`], env);
      expect({ args, code: r.code, stderr: r.stderr }).toEqual({
        args,
        code: 2,
        stderr: `ttlstream: archive root ${missing} does not exist or is not a folder (--archive, or archive.url / TTLSTREAM_ARCHIVE_URL)\n`,
      });
    }
  });

  it('--key file://key.json and --key - (stdin) read the key, as in the aws cli', async () => {
    const keyFile = join(dir, 'key.json');
    writeFileSync(keyFile, JSON.stringify(keys('o#2')) + '\n');
    const fromFile = await cli(
      ['archive', 'show', '--table', 'orders', '--key', `file://${keyFile}`, '--json'],
      env,
    );
    expect(fromFile.code).toBe(0);
    expect(fromFile.stdout.trim().split('\n')).toHaveLength(1);
    expect(fromFile.stdout).toContain('o#2');

    const missing = await cli(
      ['archive', 'show', '--table', 'orders', '--key', `file://${dir}/nope.json`],
      env,
    );
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/cannot read the key from .*nope\.json/);

    const stdin = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        resolve(__dirname, '../../../../cli/main.ts'),
        'archive',
        'show',
        '--table',
        'orders',
        '--key',
        '-',
        '--json',
      ],
      { input: JSON.stringify(keys('o#1')), env: { ...process.env, ...env }, encoding: 'utf8' },
    );
    expect(stdin.status).toBe(0);
    expect(stdin.stdout).toContain('o#1');
    expect(stdin.stdout).not.toContain('o#2');
  }, 30_000);
});
