import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const ROOT = resolve(__dirname, '..', '..', '..');
const TOOLS = join(process.env.TTLSTREAM_STACK_RUN_DIR ?? join(ROOT, 'infra', 'run'), 'deploy-tools', 'bin');
const run = promisify(execFile);

/** A linter from scripts/ensure-deploy-tools.sh; missing, the test fails with the command that installs it. */
function tool(name: 'hadolint' | 'kubernetes-validate'): string {
  const path = join(TOOLS, name);
  if (!existsSync(path)) throw new Error(`${path} is missing: run \`bash scripts/ensure-deploy-tools.sh\``);
  return path;
}

/**
 * The Dockerfile and the Kubernetes manifests through the linters an image and a cluster would apply (no container
 * engine or cluster here): hadolint's rules at style level, and the Kubernetes API schemas, strictly (an unknown
 * field fails), for the newest version the tool ships and an older one still in support.
 */
describe('deploy/ lints', () => {
  it('the Dockerfile passes hadolint with no finding', async () => {
    const out = await run(tool('hadolint'), ['--failure-threshold', 'style', join(ROOT, 'Dockerfile')]);
    expect(out.stdout).toBe('');
  }, 30_000);

  it.each(['1.37.0', '1.29.0'])(
    'every manifest matches the Kubernetes %s API schemas',
    async (version) => {
      const dir = join(ROOT, 'deploy', 'k8s');
      const files = readdirSync(dir)
        .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
        .map((f) => join(dir, f));
      expect(files.length).toBeGreaterThanOrEqual(6);
      const out = await run(tool('kubernetes-validate'), ['--strict', '--quiet', '-k', version, ...files]);
      expect(out.stdout + out.stderr).toBe('');
    },
    60_000,
  );
});
