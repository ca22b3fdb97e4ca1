import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { OVERLAYS, overlayManifests } from '../../support/k8s-manifests';

const ROOT = resolve(__dirname, '..', '..', '..');
const TOOLS = join(process.env.TTLSTREAM_STACK_RUN_DIR ?? join(ROOT, 'infra', 'run'), 'deploy-tools');
const run = promisify(execFile);
/** The API group of the Prometheus operator's resources: validated against its CRDs' schemas, not Kubernetes'. */
const OPERATOR_GROUP = 'monitoring.coreos.com/';

/** A linter from scripts/ensure-deploy-tools.sh; missing, the test fails with the command that installs it. */
function tool(name: 'hadolint' | 'kubernetes-validate' | 'kubeconform'): string {
  const path = join(TOOLS, 'bin', name);
  if (!existsSync(path)) throw new Error(`${path} is missing: run \`bash scripts/ensure-deploy-tools.sh\``);
  return path;
}

/** Each overlay as `kubectl apply -k` sends it, split by the validator that knows each kind's schema. */
function renderedFiles(dir: string): { kubernetes: string[]; operator: string[] } {
  const out = { kubernetes: [] as string[], operator: [] as string[] };
  for (const overlay of OVERLAYS) {
    const manifests = overlayManifests(overlay);
    const operator = manifests.filter((m) => m.apiVersion.startsWith(OPERATOR_GROUP));
    const kubernetes = manifests.filter((m) => !m.apiVersion.startsWith(OPERATOR_GROUP));
    for (const [kind, list] of [
      ['kubernetes', kubernetes],
      ['operator', operator],
    ] as const) {
      if (list.length === 0) continue;
      const file = join(dir, `${overlay}-${kind}.yaml`);
      writeFileSync(file, list.map((m) => stringify(m)).join('---\n'));
      out[kind].push(file);
    }
  }
  return out;
}

/**
 * The Dockerfile and the Kubernetes manifests through the linters an image and a cluster would apply (no container
 * engine or cluster here): hadolint's rules at style level; every overlay of deploy/k8s as kustomize renders it,
 * against the Kubernetes API schemas, strictly (an unknown field fails), for the newest version the tool ships and
 * an older one still in support; and the Prometheus operator's resources against the schemas of the operator's own
 * CRDs (kubeconform, strict: scripts/ensure-deploy-tools.sh converts them with every object closed).
 */
describe('deploy/ lints', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ttlstream-k8s-'));
  const files = renderedFiles(dir);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('the Dockerfile passes hadolint with no finding', async () => {
    const out = await run(tool('hadolint'), ['--failure-threshold', 'style', join(ROOT, 'Dockerfile')]);
    expect(out.stdout).toBe('');
  }, 30_000);

  it.each(['1.37.0', '1.29.0'])(
    'every overlay matches the Kubernetes %s API schemas',
    async (version) => {
      expect(files.kubernetes).toHaveLength(OVERLAYS.length);
      // A kind without a schema (a CRD's) is a warning on stdout, so an empty output means every one was checked.
      const out = await run(tool('kubernetes-validate'), [
        '--strict',
        '--quiet',
        '-k',
        version,
        ...files.kubernetes,
      ]);
      expect(out.stdout + out.stderr).toBe('');
    },
    60_000,
  );

  it("the Prometheus operator's resources match its CRDs' schemas", async () => {
    expect(files.operator.length).toBeGreaterThan(0);
    const schemas = join(TOOLS, 'crd-schemas', '{{.Group}}-{{.ResourceKind}}_{{.ResourceAPIVersion}}.json');
    // -schema-location only: kubeconform looks nowhere else, and a kind without a schema there fails.
    const out = await run(tool('kubeconform'), [
      '-strict',
      '-summary',
      '-schema-location',
      schemas,
      ...files.operator,
    ]);
    expect(out.stdout).toMatch(/Valid: [1-9]\d*, Invalid: 0, Errors: 0, Skipped: 0/);
    expect(out.stderr).toBe('');
  }, 30_000);
});
