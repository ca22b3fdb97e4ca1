import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { requireBinary } from '../../support/observability-tools';
import { unknownNames } from '../../support/promql-names';

const DIR = join(__dirname, '..', '..', '..', 'deploy', 'prometheus');
const RULES = join(DIR, 'ttlstream-rules.yml');

interface Rule {
  record?: string;
  alert?: string;
  expr: string;
  annotations?: Record<string, string>;
}

function rules(): Rule[] {
  const doc = parse(readFileSync(RULES, 'utf8')) as { groups: Array<{ rules: Rule[] }> };
  return doc.groups.flatMap((g) => g.rules);
}

const RENDER = join(DIR, 'render-rules.sh');
const PLACEHOLDER = 'https://ttlstream.invalid/docs/operations.md';

function render(args: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync('bash', [RENDER, ...args], { encoding: 'utf8' });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** The rules with every runbook_url's placeholder base replaced, as render-rules.sh should print them. */
function groupsUnder(base: string): unknown {
  const doc = parse(readFileSync(RULES, 'utf8')) as { groups: Array<{ rules: Rule[] }> };
  for (const r of doc.groups.flatMap((g) => g.rules))
    if (r.annotations?.runbook_url)
      r.annotations.runbook_url = r.annotations.runbook_url.replace(PLACEHOLDER, base);
  return doc.groups;
}

/** promtool's own checks: the rule file is valid and every alert fires, and stays silent, on its test series. */
describe('deploy/prometheus rules', () => {
  const promtool = requireBinary('promtool');
  const run = (args: string[]): string =>
    execFileSync(promtool, args, { cwd: DIR, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

  it('pass `promtool check rules`', () => {
    expect(run(['check', 'rules', 'ttlstream-rules.yml'])).toMatch(/SUCCESS: \d+ rules found/);
  }, 30_000);

  it('pass `promtool test rules` (firing and not-firing series for every alert)', () => {
    expect(run(['test', 'rules', 'tests/ttlstream-rules.test.yml'])).toContain('SUCCESS');
  }, 30_000);

  it('every alert is tested', () => {
    const tests = readFileSync(join(DIR, 'tests', 'ttlstream-rules.test.yml'), 'utf8');
    const untested = rules()
      .filter((r) => r.alert && !tests.includes(`alertname: ${r.alert}\n`))
      .map((r) => r.alert);
    expect(untested).toEqual([]);
  });

  it("render under an operator's runbook base, as a rules file promtool accepts", () => {
    const base = 'https://wiki.example.com/ttlstream/operations?page=1&x=a|b';
    const plain = render(['--runbook-base', base]);
    expect(plain.stderr).toBe('');
    expect(plain.code).toBe(0);
    expect((parse(plain.stdout) as { groups: unknown }).groups).toEqual(groupsUnder(base));
    expect(plain.stdout).not.toContain(`${PLACEHOLDER}#`);
    const dir = mkdtempSync(join(tmpdir(), 'ttlstream-rules-'));
    try {
      writeFileSync(join(dir, 'rules.yml'), plain.stdout);
      expect(run(['check', 'rules', join(dir, 'rules.yml')])).toMatch(/SUCCESS: \d+ rules found/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);

  it.each([
    [[], /--runbook-base is required/],
    [['--runbook-base'], /--runbook-base needs a URL/],
    [['--runbook-base', 'ftp://docs/ops.md'], /expected an http\(s\) URL/],
    [['--runbook-base', "https://docs/o'ps.md"], /expected an http\(s\) URL/],
    [['--runbook-base', 'https://docs/ops.md#top'], /expected an http\(s\) URL/],
    [['--runbook-base', 'https://docs/ops.md', '--prometheus-rule'], /unknown argument "--prometheus-rule"/],
    [['--runbook-url', 'https://docs/ops.md'], /unknown argument "--runbook-url"/],
  ])('render refuses %j with one line on stderr and exit 2', (args, message) => {
    const r = render(args);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  });

  it('use only series and labels ttlstream exposes', () => {
    const problems = rules().flatMap((r) => unknownNames(r.expr).map((p) => `${r.alert ?? r.record}: ${p}`));
    expect(problems).toEqual([]);
  });

  it('give every alert a summary, a description and a runbook entry that exists in docs/operations.md', () => {
    const runbook = readFileSync(join(DIR, '..', '..', 'docs', 'operations.md'), 'utf8');
    // GitHub's anchors: the heading lower-cased, spaces to dashes, punctuation dropped.
    const anchors = new Set(
      [...runbook.matchAll(/^#+ (.+)$/gm)].map((m) =>
        (m[1] ?? '')
          .toLowerCase()
          .replace(/[^a-z0-9 -]/g, '')
          .replace(/ /g, '-'),
      ),
    );
    for (const r of rules().filter((x) => x.alert)) {
      const a = r.annotations ?? {};
      expect({ alert: r.alert, summary: !!a.summary, description: !!a.description }).toEqual({
        alert: r.alert,
        summary: true,
        description: true,
      });
      // Absolute, under the placeholder base render-rules.sh replaces.
      const anchor = /^https:\/\/ttlstream\.invalid\/docs\/operations\.md#(.+)$/.exec(
        a.runbook_url ?? '',
      )?.[1];
      expect({ alert: r.alert, anchor: anchor !== undefined && anchors.has(anchor) }).toEqual({
        alert: r.alert,
        anchor: true,
      });
    }
  });
});
