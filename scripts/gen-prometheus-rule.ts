import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { format, resolveConfig } from 'prettier';
import { Document, parseDocument } from 'yaml';

/**
 * `npm run deploy:prometheus-rule`: write the production overlay's PrometheusRule from the rules file, its groups as
 * they are (comments and block scalars kept) under a PrometheusRule's spec, formatted as the repository's other
 * YAML. test/unit/deploy/k8s-manifests.test.ts fails when the two hold different rules.
 */
const ROOT = resolve(__dirname, '..');
const RULES = resolve(ROOT, 'deploy', 'prometheus', 'ttlstream-rules.yml');
const TARGET = resolve(ROOT, 'deploy', 'k8s', 'overlays', 'production', 'prometheusrule.yaml');
/** The annotation the overlay's replacement reads each runbook_url's base from; the rules file's placeholder base. */
const RUNBOOK_BASE_ANNOTATION = 'ttlstream/runbook-base';
const RUNBOOK_BASE = 'https://ttlstream.invalid/docs/operations.md';

const HEADER = [
  ' Generated from deploy/prometheus/ttlstream-rules.yml by `npm run deploy:prometheus-rule`: edit that file, not',
  ' this one (test/unit/deploy/k8s-manifests.test.ts fails when this one is behind it).',
  ' The same rules for the Prometheus operator, which loads PrometheusRule objects rather than rule files. Your',
  " Prometheus's ruleSelector decides which it loads: give this one the labels it asks for (kustomization.yaml).",
  ` Every runbook_url is <${RUNBOOK_BASE_ANNOTATION}>#<alert>: kustomization.yaml's replacement puts your base there.`,
].join('\n');

async function main(): Promise<void> {
  const rules = parseDocument(readFileSync(RULES, 'utf8'));
  if (rules.errors.length > 0) throw new Error(`${RULES}: ${rules.errors.map((e) => e.message).join('; ')}`);
  const urls = [...readFileSync(RULES, 'utf8').matchAll(/runbook_url: '?([^'\n]*)/g)].map((m) => m[1] ?? '');
  const off = urls.filter((u) => !u.startsWith(`${RUNBOOK_BASE}#`));
  if (urls.length === 0 || off.length > 0)
    throw new Error(`${RULES}: every runbook_url must start with ${RUNBOOK_BASE}#, not ${off.join(', ')}`);
  const rule = new Document({
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: {
      name: 'ttlstream',
      labels: { 'app.kubernetes.io/name': 'ttlstream' },
      annotations: { [RUNBOOK_BASE_ANNOTATION]: RUNBOOK_BASE },
    },
    spec: {},
  });
  rule.setIn(['spec', 'groups'], rules.get('groups', true));
  rule.commentBefore = HEADER;
  const options = await resolveConfig(TARGET);
  writeFileSync(TARGET, await format(rule.toString({ lineWidth: 110 }), { ...options, parser: 'yaml' }));
  console.log(`wrote ${TARGET}`);
}

void main();
