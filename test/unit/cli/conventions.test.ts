import { readFileSync } from 'node:fs';
import { posix, relative, resolve } from 'node:path';
import { filesUnder } from '../../support/files';
import { cli, commandTree, leafCommandPaths } from '../../support/cli';

describe('--endpoint-url, --region and --brokers on every command', () => {
  it.each(leafCommandPaths().map((p) => [p.join(' '), p] as const))(
    '%s accepts them',
    async (_name, path) => {
      const r = await cli([
        ...path,
        '--endpoint-url',
        'http://127.0.0.1:1',
        '--region',
        'eu-west-3',
        '--brokers',
        'k1:9092',
        '--help',
      ]);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
    },
  );

  it('flags win over the environment (the documented precedence)', async () => {
    const r = await cli(
      [
        'config',
        '--json',
        '--endpoint-url',
        'http://flag:8000',
        '--region',
        'eu-west-3',
        '--brokers',
        'k1:1, k2:2',
      ],
      {
        TTLSTREAM_DYNAMODB_ENDPOINT: 'http://env:8000',
        TTLSTREAM_REGION: 'us-east-2',
        TTLSTREAM_KAFKA_BROKERS: 'env:9092',
      },
    );
    expect(r.code).toBe(0);
    const config = JSON.parse(r.stdout) as {
      region: string;
      dynamodb: { endpoint: string };
      kafka: { brokers: string[] };
    };
    expect({
      region: config.region,
      endpoint: config.dynamodb.endpoint,
      brokers: config.kafka.brokers,
    }).toEqual({
      region: 'eu-west-3',
      endpoint: 'http://flag:8000',
      brokers: ['k1:1', 'k2:2'],
    });
  });

  it('a bad value is a configuration error naming the setting (exit 2)', async () => {
    const r = await cli(['config', '--brokers', 'no-port']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^ttlstream: .*kafka\.brokers/);
  });
});

describe('--output json|table|text, with --json as its alias', () => {
  it('every command with --json also takes --output', () => {
    const missing: string[] = [];
    for (const { path, command } of commandTree()) {
      const longs = command.options.map((o) => o.long);
      if (longs.includes('--json') && !longs.includes('--output')) missing.push(path.join(' '));
    }
    expect(missing).toEqual([]);
  });

  it('--output json is --json; table and text print the human form; --json with --output table is exit 2', async () => {
    const json = await cli(['config', '--output', 'json']);
    const alias = await cli(['config', '--json']);
    expect(json.code).toBe(0);
    expect(json.stdout).toBe(alias.stdout);
    expect(() => JSON.parse(json.stdout) as unknown).not.toThrow();
    const table = await cli(['config', '-o', 'table']);
    expect(table.stdout).toMatch(/^setting\s+value\s+source\s+environment variable/);
    expect((await cli(['config', '--output', 'text'])).stdout).toBe(table.stdout);
    const contradiction = await cli(['config', '--json', '--output', 'table']);
    expect(contradiction.code).toBe(2);
    expect(contradiction.stderr).toBe('ttlstream: --json contradicts --output table\n');
    expect((await cli(['config', '--output', 'yaml'])).code).toBe(2);
  });
});

describe('command builders declare options; what a command does is a named function', () => {
  /** `.action(` given a function with a block body, directly or through `action(env, ...)`. */
  const INLINE_ACTION =
    /\.action\(\s*(?:action(?:<[^>]*>)?\(\s*env,\s*)?(?:async\s*)?(?:\([^)]*\)|[A-Za-z_$][\w$]*)\s*=>\s*\{/g;
  const inlineActions = (source: string): number[] =>
    [...source.matchAll(INLINE_ACTION)].map((m) => source.slice(0, m.index).split('\n').length);

  it('no command of cli/ writes its action inline in its builder', () => {
    const root = resolve(__dirname, '..', '..', '..');
    const offenders = filesUnder(resolve(root, 'cli'))
      .filter((f) => f.endsWith('.ts'))
      .flatMap((f) => inlineActions(readFileSync(f, 'utf8')).map((line) => `${relative(root, f)}:${line}`));
    expect(offenders).toEqual([]);
  });

  it('finds an inline action, whichever way it is written', () => {
    const inline = [
      '.action(\n  action<Flags>(env, async (ctx, opts) => {\n    await go(ctx, opts);\n  }),\n)',
      '.action(action(env, async (ctx) => {}))',
      '.action(async () => {\n  print();\n})',
      'cmd.action((shell: string, _opts: unknown) => {\n  print(shell);\n})',
    ];
    expect(inline.map(inlineActions)).toEqual([[1], [1], [1], [1]]);
    const named = [
      '.action(action<Flags>(env, replayWindow, { overrides: archiveOverrides }))',
      '.action(action<Flags>(env, (ctx, opts) => auditAction(cmd, ctx, opts)))',
      '.action(() => printOpenApi(env))',
    ];
    expect(named.map(inlineActions)).toEqual([[], [], []]);
  });
});

describe('the CLI as a map (cli/README.md, "Where a command lives")', () => {
  const root = resolve(__dirname, '..', '..', '..');
  const files = filesUnder(resolve(root, 'cli'))
    .filter((f) => f.endsWith('.ts'))
    .map((f) => relative(root, f).split('\\').join('/'));
  /** The folder under cli/ a file belongs to (`kit`, a command group), or '' for cli/'s root. */
  const groupOf = (file: string): string => file.split('/').slice(1, -1)[0] ?? '';
  /** `demo` tours the commands: it runs the pipeline as `run` does and reads the archive as `archive` does. */
  const TOURS: Record<string, string[]> = { demo: ['run', 'archive'] };
  const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*)['"](\.{1,2}\/[^'"]+)['"]/g;

  it("cli/'s root holds only the entry and the command tree", () => {
    expect(files.filter((f) => groupOf(f) === '').sort()).toEqual(['cli/main.ts', 'cli/program.ts']);
  });

  it('a group imports from its own folder and from cli/kit/ only; kit imports no group', () => {
    const crossings = files.flatMap((file) => {
      const group = groupOf(file);
      if (group === '') return [];
      return [...readFileSync(resolve(root, file), 'utf8').matchAll(IMPORT)]
        .map((m) => posix.normalize(posix.join(posix.dirname(file), m[1] as string)))
        .filter((target) => target.startsWith('cli/') && groupOf(`${target}.ts`) !== '')
        .map((target) => ({ target, to: groupOf(`${target}.ts`) }))
        .filter(({ to }) => to !== group && to !== 'kit' && !(TOURS[group] ?? []).includes(to))
        .map(({ target }) => `${file} imports ${target}`);
    });
    expect(crossings).toEqual([]);
  });
});
