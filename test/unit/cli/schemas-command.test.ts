import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cli } from '../../support/cli';

describe('ttlstream schemas export', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'cli-schemas-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const run = (...args: string[]) => cli(args, {}, { cwd: dir });

  it('writes the files into --dir (relative to the working directory) and lists them', async () => {
    const r = await run('schemas', 'export', '--dir', 'out');
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    const files = readdirSync(join(dir, 'out')).sort();
    expect(files).toEqual(
      [
        'archived-record.v1.avsc',
        'fingerprints.json',
        'fingerprints.md',
        'retraction.schema.json',
        'retraction.v1.avsc',
        'stream-record.schema.json',
        'stream-record.v1.avsc',
        'subjects.json',
        'subjects.md',
        'asyncapi.json',
      ].sort(),
    );
    for (const f of files) expect(r.stdout).toContain(f);
  });

  it('--json names the directory and each file with its size', async () => {
    const r = await run('schemas', 'export', '-d', 'j', '--json');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { dir: string; files: { name: string; bytes: number }[] };
    expect(out.dir).toBe(join(dir, 'j'));
    expect(out.files.every((f) => f.bytes > 0)).toBe(true);
  });

  it('usage errors exit 2 with one line: no --dir, a file as --dir', async () => {
    const missing = await run('schemas', 'export');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--dir/);
    writeFileSync(join(dir, 'file'), '');
    const file = await run('schemas', 'export', '--dir', 'file');
    expect(file.code).toBe(2);
    expect(file.stderr.trim().split('\n')).toHaveLength(1);
    expect(file.stderr).toContain('not a directory');
  });

  it('--help describes the command', async () => {
    const r = await run('schemas', 'export', '--help');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('--dir <directory>');
    expect(r.stdout).toContain('fingerprint');
  });
});
