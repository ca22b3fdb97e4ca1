import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../../../cli/program';
import { fakeIo } from '../../support/cli';

async function script(shell: string): Promise<string> {
  const io = fakeIo();
  expect(await runCli(['completion', shell], io)).toBe(0);
  return io.stdout.text;
}

describe('ttlstream completion bash|zsh', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ttlstream-completion-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** What real bash offers after `words` (the last one being completed). */
  async function complete(...words: string[]): Promise<string[]> {
    const file = join(dir, 'ttlstream.bash');
    writeFileSync(file, await script('bash'));
    const line = ['ttlstream', ...words].map((w) => `'${w}'`).join(' ');
    const out = execFileSync(
      'bash',
      [
        '-c',
        `source ${file}; COMP_WORDS=(${line}); COMP_CWORD=${words.length}; _ttlstream; printf '%s\\n' "\${COMPREPLY[@]}"`,
      ],
      { encoding: 'utf8' },
    );
    return out.split('\n').filter((l) => l.length > 0);
  }

  it('completes commands, subcommands and each command’s options, skipping option values', async () => {
    expect(await complete('ttl', 'u')).toEqual(['update']);
    expect(await complete('restore', '--table', 'orders', '--dr')).toEqual(['--dry-run']);
    expect(await complete('--region', 'eu-west-1', 'gu')).toEqual(['guard']);
    expect(await complete('topics', '')).toEqual(expect.arrayContaining(['apply', 'describe']));
    // The connection flags are offered on every command.
    expect(await complete('replay', '--endpoint')).toEqual(['--endpoint-url']);
  });

  it('zsh gets the same function through bashcompinit; another shell is a usage error', async () => {
    const zsh = await script('zsh');
    expect(zsh).toContain('bashcompinit');
    expect(zsh).toContain('complete -o default -F _ttlstream ttlstream');
    const io = fakeIo();
    expect(await runCli(['completion', 'fish'], io)).toBe(2);
  });
});
