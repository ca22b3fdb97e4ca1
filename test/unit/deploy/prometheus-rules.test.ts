import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
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
      const anchor = /^docs\/operations\.md#(.+)$/.exec(a.runbook_url ?? '')?.[1];
      expect({ alert: r.alert, anchor: anchor !== undefined && anchors.has(anchor) }).toEqual({
        alert: r.alert,
        anchor: true,
      });
    }
  });
});
