import type { Command } from 'commander';
import { buildProgram, runCli } from '../../../cli/program';
import { fakeIo } from './fake-io';

/** The real program, run in-process on an in-memory terminal. No service is touched by these commands. */
async function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  const io = fakeIo({ env });
  const code = await runCli(args, io);
  return { code, stdout: io.stdout.text, stderr: io.stderr.text };
}

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

  it('--help → 0 on stdout; --version → 0', async () => {
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Exit codes: 0 ok, 1 failure, 2 usage');
    const version = await cli(['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
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

  it('human output lists each setting with its environment variable', async () => {
    const r = await cli(['config'], { TTLSTREAM_PRODUCER_CONCURRENCY: '7' });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^producer\.concurrency\s+7\s+TTLSTREAM_PRODUCER_CONCURRENCY$/m);
  });

  it('every command has an example in its help', async () => {
    const paths: string[][] = [];
    const walk = (cmd: Command, path: string[]): void => {
      for (const sub of cmd.commands) {
        const p = [...path, sub.name()];
        if (sub.commands.length > 0) walk(sub, p);
        else paths.push(p);
      }
    };
    walk(buildProgram({ io: fakeIo(), setExitCode: () => undefined }), []);
    expect(paths.length).toBeGreaterThan(0);
    for (const path of paths) {
      const r = await cli([...path, '--help']);
      expect({ path, code: r.code }).toEqual({ path, code: 0 });
      expect(r.stdout).toMatch(new RegExp(`Examples?:\\n\\s+\\$ .*ttlstream ${path.join(' ')}`));
    }
  });
});
