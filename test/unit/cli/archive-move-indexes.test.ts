import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsArchiveStorage, besideIndexPathFor, indexPathFor } from '../../../archive/storage';
import { cli } from '../../support/cli';
import { archiveRows, ordersRows } from '../../support/archive-fixture';
import { filesUnder } from '../../support/files';

/**
 * `archive move-indexes`, `archive verify` and `archive ddl` in-process over a Parquet archive whose key indexes sit
 * beside the data files, as versions before the `_index/` layout wrote them (docs/decisions/0033).
 */

describe('ttlstream archive move-indexes', () => {
  let dir: string;
  let moved: string[];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ttlstream-cli-move-'));
    const storage = new FsArchiveStorage(dir);
    const base = Math.floor(Date.UTC(2024, 4, 1, 10) / 1000);
    const rows = ordersRows(8, base, 1800);
    await archiveRows(storage, 't', rows, { perRoll: 4, format: 'parquet' });
    const data = filesUnder(dir)
      .filter((f) => f.endsWith('.parquet'))
      .map((f) => f.slice(dir.length + 1));
    moved = data.slice(0, 2);
    for (const f of moved) {
      await storage.put(besideIndexPathFor(f), (await storage.get(indexPathFor(f))) as Buffer);
      await storage.delete(indexPathFor(f));
    }
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const archive = (): string[] => ['--archive', `file://${dir}`];

  it('verify passes and says how many indexes are beside; ddl warns Athena and filters Spark', async () => {
    const verified = await cli(['archive', 'verify', ...archive()]);
    expect(verified.code).toBe(0);
    expect(verified.stdout).toContain(`${moved.length} key index(es) beside their data files`);
    const athena = await cli(['archive', 'ddl', '--table', 'orders', '--engine', 'athena', ...archive()]);
    expect(athena.code).toBe(0);
    expect(athena.stderr).toContain(
      `${moved.length} Parquet file(s) of orders still have their key index beside`,
    );
    expect(athena.stderr).toContain('ttlstream archive move-indexes --table orders');
    const spark = await cli(['archive', 'ddl', '--table', 'orders', '--engine', 'spark', ...archive()]);
    expect(spark.stdout).toContain("pathGlobFilter '*.parquet'");
  });

  it('a dry run lists and moves nothing; the run moves them; then verify, ddl and a rerun are clean', async () => {
    const before = filesUnder(dir);
    const dry = await cli(['archive', 'move-indexes', '--dry-run', ...archive()]);
    expect(dry.code).toBe(0);
    for (const f of moved) expect(dry.stdout).toContain(`would move ${besideIndexPathFor(f)}`);
    expect(filesUnder(dir)).toEqual(before);

    const run = await cli(['archive', 'move-indexes', '--json', ...archive()]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      ok: true,
      moved: moved.map(besideIndexPathFor),
      refused: [],
      dryRun: false,
      stopped: false,
    });
    expect(filesUnder(dir).filter((f) => f.endsWith('.idx.json') && !f.includes('/_index/'))).toEqual([]);

    const verified = await cli(['archive', 'verify', ...archive()]);
    expect(verified.code).toBe(0);
    expect(verified.stdout).not.toContain('beside');
    const athena = await cli(['archive', 'ddl', '--table', 'orders', '--engine', 'athena', ...archive()]);
    expect(athena.stderr).toBe('');
    const spark = await cli(['archive', 'ddl', '--table', 'orders', '--engine', 'spark', ...archive()]);
    expect(spark.stdout).toContain("OPTIONS (mergeSchema 'true')");
    const again = await cli(['archive', 'move-indexes', ...archive()]);
    expect([again.code, again.stdout]).toEqual([0, 'moved 0 key index(es) to _index/\n']);
  });

  it('exits 1 and leaves an index that does not match its seal where it is', async () => {
    const storage = new FsArchiveStorage(dir);
    const f = moved[0] as string;
    const body = (await storage.get(indexPathFor(f))) as Buffer;
    await storage.delete(indexPathFor(f));
    await storage.put(besideIndexPathFor(f), Buffer.from('{}'));
    const run = await cli(['archive', 'move-indexes', ...archive()]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(besideIndexPathFor(f));
    expect(run.stdout).toContain('does not match its seal');
    expect(await storage.get(besideIndexPathFor(f))).toEqual(Buffer.from('{}'));
    await storage.put(besideIndexPathFor(f), body);
    expect((await cli(['archive', 'move-indexes', ...archive()])).code).toBe(0);
  });
});
