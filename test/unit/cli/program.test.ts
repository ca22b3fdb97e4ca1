import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { exitCodeFor } from '../../../cli/kit/exit-codes';
import { ConfigError, NotFoundError, ValidationError } from '../../../core/errors';
import { renderTable, style, useColour } from '../../../cli/kit/io';
import { createProgress } from '../../../cli/kit/progress';
import { cli, fakeIo, leafCommandPaths } from '../../support/cli';

/** The real program, run in-process on an in-memory terminal. No service is touched by these commands. */

describe('exit codes and error lines', () => {
  it('unknown option → 2 with one clear line', async () => {
    const r = await cli(['config', '--bogus']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe("ttlstream: unknown option '--bogus'\n");
    expect(r.stdout).toBe('');
  });

  it('unknown command → 2, with a suggestion on the same line', async () => {
    const r = await cli(['confg']);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^ttlstream: unknown command 'confg' \(Did you mean config\?\)/);
  });

  it('no command → help on stderr and 2', async () => {
    const r = await cli([]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('Usage: ttlstream');
  });

  it('a command group without its subcommand → help on stderr and 2; `help <command>` → 0', async () => {
    const group = await cli(['ttl']);
    expect(group.code).toBe(2);
    expect(group.stderr).toContain('Usage: ttlstream ttl');
    const help = await cli(['help', 'ttl']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: ttlstream ttl');
  });

  it('--help → 0 on stdout; --version → 0', async () => {
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Exit codes: 0 ok, 1 failure, 2 usage');
    const version = await cli(['--version']);
    expect(version.code).toBe(0);
    // The same version as package.json (the CLI does not read it at run time: dist/ has no package.json).
    const pkg = JSON.parse(readFileSync(resolve(__dirname, '../../../package.json'), 'utf8')) as {
      version: string;
    };
    expect(version.stdout).toBe(`${pkg.version}\n`);
  });

  it('a bad configuration value → 2 naming the setting and its variable', async () => {
    const r = await cli(['config'], { TTLSTREAM_API_PORT: '70000' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^ttlstream: api\.port \(TTLSTREAM_API_PORT\): .+\n$/);
    const notNumber = await cli(['config'], { TTLSTREAM_SCANNER_PAGE_SIZE: 'many' });
    expect(notNumber.code).toBe(2);
    expect(notNumber.stderr).toBe('ttlstream: TTLSTREAM_SCANNER_PAGE_SIZE: expected a number, got "many"\n');
  });

  it('a missing config file → 2 naming the file', async () => {
    const r = await cli(['--config', '/nonexistent/ttlstream.json', 'config']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^ttlstream: config file \/nonexistent\/ttlstream\.json: /);
  });

  it('an invalid --log-level choice → 2', async () => {
    const r = await cli(['--log-level', 'loud', 'config']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^ttlstream: option '--log-level <level>' argument 'loud' is invalid/);
  });
});

describe('ttlstream config', () => {
  it('--json prints the effective configuration with secrets redacted', async () => {
    const r = await cli(['config', '--json'], {
      TTLSTREAM_API_TOKENS: 'a-very-secret-token-123',
      TTLSTREAM_KAFKA_BROKERS: 'k1:9092,k2:9093',
    });
    expect(r.code).toBe(0);
    const parsed = JSON.parse(r.stdout) as { kafka: { brokers: string[] }; api: { tokens: string[] } };
    expect(parsed.kafka.brokers).toEqual(['k1:9092', 'k2:9093']);
    expect(parsed.api.tokens).toEqual(['[redacted]']);
    expect(r.stdout).not.toContain('a-very-secret-token-123');
  });

  it('human output lists each setting with its source and environment variable', async () => {
    const r = await cli(['config'], { TTLSTREAM_PRODUCER_CONCURRENCY: '7' });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^producer\.concurrency\s+7\s+env\s+TTLSTREAM_PRODUCER_CONCURRENCY$/m);
  });

  it('names where each value comes from: default, config file, env or flag', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ttlstream-config-sources-'));
    try {
      const file = join(dir, 'ttlstream.json');
      writeFileSync(file, JSON.stringify({ scanner: { pageSize: 77 }, producer: { batchSize: 33 } }));
      const r = await cli(['--config', file, 'config', '--brokers', 'k9:9092'], {
        TTLSTREAM_PRODUCER_BATCH_SIZE: '44',
      });
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^scanner\.pageSize\s+77\s+config file\s/m);
      expect(r.stdout).toMatch(/^producer\.batchSize\s+44\s+env\s/m);
      expect(r.stdout).toMatch(/^kafka\.brokers\s+\["k9:9092"\]\s+flag\s/m);
      expect(r.stdout).toMatch(/^producer\.concurrency\s+\d+\s+default\s/m);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('every command has an example in its help', async () => {
    const paths = leafCommandPaths();
    expect(paths.length).toBeGreaterThan(0);
    for (const path of paths) {
      const r = await cli([...path, '--help']);
      expect({ path, code: r.code }).toEqual({ path, code: 0 });
      expect(r.stdout).toMatch(new RegExp(`Examples?:\\n\\s+\\$ .*ttlstream ${path.join(' ')}`));
    }
  });
});

describe('usage errors are caught before any service is contacted (exit 2)', () => {
  // An unreachable endpoint: if a command got as far as a request, it would fail with 1, not 2.
  const offline = { TTLSTREAM_DYNAMODB_ENDPOINT: 'http://127.0.0.1:9', TTLSTREAM_DYNAMODB_MAX_ATTEMPTS: '1' };

  it.each([
    [
      ['run', '--roles', 'scanner,deleter'],
      /^ttlstream: option '--roles <list>' argument 'scanner,deleter' is invalid\. --roles: unknown role "deleter"/,
    ],
    [['run', '--shutdown-timeout', '30'], /argument '30' is invalid\. invalid duration "30"/],
    [['preview', '--table', 't1x', '--within', '3x'], /argument '3x' is invalid/],
    [
      ['preview', '--table', 't1x', '--limit', '0'],
      /argument '0' is invalid\. expected a positive whole number/,
    ],
    [['ttl', 'describe'], /^ttlstream: required option '-t, --table <name>' not specified/],
    [
      ['ttl', 'update', '--table', 't1x'],
      /^ttlstream: one of --enable, --disable or --expire-after-seconds is required/,
    ],
    [
      ['ttl', 'update', '--table', 't1x', '--enable', '--disable'],
      /^ttlstream: --enable and --disable cannot be used together/,
    ],
    [
      ['ttl', 'update', '--table', 't1x', '--enable', '--mode', 'cosmos'],
      /^ttlstream: --default-ttl is required with --mode cosmos/,
    ],
    [
      ['ttl', 'update', '--table', 't1x', '--enable', '--mode', 'weird', '--attribute', 'a'],
      /argument 'weird' is invalid\. Allowed choices are dynamodb, cosmos, mongo/,
    ],
    [['ttl', 'update', '--table', 't1x', '--expire-after-seconds', 'soon'], /argument 'soon' is invalid/],
    [
      ['ttl', 'update', '--table', 't1x', '--enable', '--settings', '{}', '--attribute', 'exp'],
      /^ttlstream: option '--settings <json>' cannot be used with option '--attribute <name>'/,
    ],
    [
      ['preview', '--table', 't1x', '--legal-hold-attribute', 'h', '--settings', '{}'],
      /^ttlstream: option '--settings <json>' cannot be used with option '--legal-hold-attribute <name>'/,
    ],
    [
      ['restore', '--table', 't1x', '--key', '{"pk":{"S":"a"}}', '--key-prefix', 'a'],
      /cannot be used with option '--key-prefix/,
    ],
    [['restore', '--table', 't1x', '--key', 'pk=a'], /argument 'pk=a' is invalid\. not JSON/],
    [['restore', '--table', 't1x', '--ttl', 'forever'], /expected keep, remove or extend=<seconds>/],
    [['restore', '--table', 't1x', '--ttl-attribute', ''], /expected an attribute name of 1-255 characters/],
    [
      ['restore', '--table', 't1x', '--from', '2024-05-02', '--to', '2024-05-01'],
      /^ttlstream: --from is after --to/,
    ],
    [
      ['replay', '--table', 't1x', '--from', 'yesterday', '--to', '2024-05-01', '--topic', 'x'],
      /--from: expected an ISO-8601 time/,
    ],
    [
      ['replay', '--table', 't1x', '--from', '2024-05-01', '--to', '2024-05-02'],
      /required option '--topic <name>' not specified/,
    ],
    [['archive', 'show'], /^ttlstream: give either a file or --table/],
    [['archive', 'show', 'x.avro', '--table', 't1x'], /^ttlstream: give either a file or --table/],
    [['archive', 'ls', '--from', '2024-05-01'], /^ttlstream: --from\/--to need --table/],
    [['demo', '--watch-timeout', 'long'], /argument 'long' is invalid/],
    [['ttl', 'list', 'extra'], /too many arguments/],
  ])('%j', async (args, message) => {
    const r = await cli(args, offline);
    expect({ code: r.code, lines: r.stderr.trim().split('\n').length }).toEqual({ code: 2, lines: 1 });
    expect(r.stderr).toMatch(message);
    expect(r.stdout).toBe('');
  });
});

describe('the offline endpoint above really fails requests', () => {
  it('a well-formed command that reaches the DynamoDB API exits 1 (a failure, not a usage error)', async () => {
    const r = await cli(['ttl', 'describe', '--table', 't1x'], {
      TTLSTREAM_DYNAMODB_ENDPOINT: 'http://127.0.0.1:9',
      TTLSTREAM_DYNAMODB_MAX_ATTEMPTS: '1',
    });
    expect(r.code).toBe(1);
    // Before its first request the command says which endpoints it uses and where they came from; then the error.
    expect(r.stderr).toMatch(
      /^endpoints: DynamoDB http:\/\/127\.0\.0\.1:9 \(TTLSTREAM_DYNAMODB_ENDPOINT\); Kafka /,
    );
    expect(r.stderr).toMatch(/\nttlstream: [^\n]+\n$/);
    expect(r.stdout).toBe('');
  });

  it('--quiet (or TTLSTREAM_QUIET=1) leaves only the error line', async () => {
    const env = { TTLSTREAM_DYNAMODB_ENDPOINT: 'http://127.0.0.1:9', TTLSTREAM_DYNAMODB_MAX_ATTEMPTS: '1' };
    for (const r of [
      await cli(['--quiet', 'ttl', 'describe', '--table', 't1x'], env),
      await cli(['ttl', 'describe', '--table', 't1x'], { ...env, TTLSTREAM_QUIET: '1' }),
    ]) {
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^ttlstream: [^\n]+\n$/);
    }
  });
});

describe('output conventions', () => {
  it('colours only on a terminal, never with NO_COLOR or TERM=dumb', () => {
    const tty = fakeIo({ tty: true });
    expect(useColour(tty)).toBe(true);
    expect(style(true).red('x')).toBe('\u001b[31mx\u001b[39m');
    expect(useColour(fakeIo({ tty: false }))).toBe(false);
    expect(useColour(fakeIo({ tty: true, env: { NO_COLOR: '1' } }))).toBe(false);
    expect(useColour(fakeIo({ tty: true, env: { TERM: 'dumb' } }))).toBe(false);
    expect(style(false).red('x')).toBe('x');
  });

  it('progress bars switch off when stdout is not a terminal or output is JSON', () => {
    const piped = fakeIo({ tty: false });
    const bar = createProgress(piped, 'restore');
    bar.update(5, 10);
    bar.stop();
    expect(piped.stderr.text + piped.stdout.text).toBe('');
    const json = fakeIo({ tty: true });
    const quiet = createProgress(json, 'restore', { json: true });
    quiet.update(1, 2);
    quiet.stop();
    expect(json.stderr.text).toBe('');
  });

  it('renders aligned tables', () => {
    expect(
      renderTable(
        ['A', 'LONGER'],
        [
          ['xyz', '1'],
          ['q', '22'],
        ],
      ),
    ).toBe('A    LONGER\nxyz  1\nq    22\n');
    // Coloured cells align by what is visible.
    const c = style(true);
    expect(
      renderTable(
        ['S', 'T'],
        [
          [c.green('ENABLED'), 'a'],
          [c.dim('OFF'), 'b'],
        ],
      ),
    ).toBe(`S        T\n${c.green('ENABLED')}  a\n${c.dim('OFF')}      b\n`);
  });
});

describe('exitCodeFor', () => {
  it('maps our error classes, and follows causes (a role that failed to start on a bad setting is a config error)', () => {
    expect(exitCodeFor(new ConfigError('x'))).toBe(2);
    expect(exitCodeFor(new ValidationError('x'))).toBe(2);
    expect(exitCodeFor(new NotFoundError('x'))).toBe(1);
    expect(exitCodeFor(new Error('boom'))).toBe(1);
    expect(
      exitCodeFor(new Error('archiver failed to start', { cause: new ConfigError('archive.url') })),
    ).toBe(2);
    expect(exitCodeFor(new Error('producer failed to start', { cause: new Error('ECONNREFUSED') }))).toBe(1);
  });
});
