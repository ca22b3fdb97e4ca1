import { cli, commandTree } from '../../support/cli';

/** Every option that takes a value, with the command path that reaches it. */
const valueOptions = commandTree().flatMap(({ path, command }) =>
  command.options.filter((option) => option.required).map((option) => ({ path, option })),
);

const cases = valueOptions.map(({ path, option }) => ({
  name: `${[...path, option.long ?? option.short].join(' ')}`,
  path,
  flag: (option.long ?? option.short) as string,
}));

describe('an option value starting with -- is a usage error, on every command', () => {
  it('covers the options of every command (the tree is walked, not listed)', () => {
    const names = cases.map((c) => c.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'topics apply --table',
        '--config',
        'restore --ttl-attribute',
        'restore --key-prefix',
        'restore --table',
        'replay --topic',
        'ttl update --attribute',
      ]),
    );
    expect(cases.length).toBeGreaterThan(30);
  });

  it.each(cases)('$name --dry-run → exit 2 before anything runs', async ({ path, flag }) => {
    const r = await cli([...path, flag, '--dry-run']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^ttlstream: option '.*' got '--dry-run' as its value/);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it.each(cases)('$name=--value is taken as written', async ({ path, flag }) => {
    // --help stops before any action; a parser may still reject the value, but not as a swallowed flag.
    const r = await cli([...path, `${flag}=--value`, '--help']);
    expect(r.stderr).not.toMatch(/as its value/);
  });

  it('the reported case: restore with a forgotten --ttl-attribute value never reaches the archive', async () => {
    const r = await cli(['restore', '-t', 'T', '--key', '{"pk":{"S":"a"}}', '--ttl-attribute', '--dry-run']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--ttl-attribute=--dry-run');
  });

  it('a short option with the value glued on (-t--dry-run) is caught too; `--` ends the check', async () => {
    expect((await cli(['restore', '-t--dry-run'])).code).toBe(2);
    const r = await cli(['restore', '--key-prefix=--x', '-t', 'T', '--help']);
    expect(r.code).toBe(0);
  });
});
