import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsArchiveStorage } from '../../../archive/storage';
import { cli } from '../../support/cli';
import { archiveRows, ordersRows } from '../../support/archive-fixture';
import { filesUnder } from '../../support/files';

/** `archive verify` and `archive lifecycle` in-process on a file-system archive: no service is touched. */

describe('ttlstream archive verify / lifecycle', () => {
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttlstream-cli-verify-'));
    const storage = new FsArchiveStorage(dir);
    const base = Math.floor(Date.UTC(2024, 4, 1, 10) / 1000);
    const rows = ordersRows(12, base, 600);
    await archiveRows(storage, 't', rows, { perRoll: 4, dedupSize: 10 });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('exits 0 on an untouched archive and 1, naming the file, once a data file is altered', async () => {
    const ok = await cli(['archive', 'verify', '--archive', `file://${dir}`]);
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain('archive verified: no finding');
    expect(ok.stdout).toContain('12 row(s)');

    const json = await cli(['archive', 'verify', '--archive', `file://${dir}`, '--json']);
    const report = JSON.parse(json.stdout) as { ok: boolean; heads: Record<string, { path: string } | null> };
    expect(report.ok).toBe(true);
    expect(report.heads['t/0']?.path).toMatch(
      /^_manifest\/t\/0\/00000000000000000008-00000000000000000011\.json$/,
    );

    const file = filesUnder(dir).filter((f) => f.endsWith('.avro'))[1] as string;
    const body = readFileSync(file);
    writeFileSync(file, Buffer.concat([body, Buffer.from('x')]));
    const bad = await cli(['archive', 'verify', '--archive', `file://${dir}`]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain('altered-file');
    expect(bad.stdout).toContain(file.slice(dir.length + 1));
    expect(bad.stdout).toContain('1 finding(s)');
  });

  it('lifecycle refuses a file-system archive, naming the setting', async () => {
    const r = await cli(['archive', 'lifecycle', '--table', 'orders', '--archive', `file://${dir}`]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('archive.url (TTLSTREAM_ARCHIVE_URL)');
  });
});
