import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { ROOT_DIR } from './ports';

const execFileAsync = promisify(execFile);

/**
 * The set-up scripts that install what suites run besides the stack (each idempotent: a second or so when all is
 * there; the first time per machine, minutes): `npm test` on a fresh clone prepares them as it brings the stack up.
 * CI prepares them in its background set-up and runs the tests with TTLSTREAM_TEST_AUTOSTART=0, which skips this.
 * A suite that alone needs a heavy part prepares it itself the same way (the image: deploy/containers; pyarrow and
 * Spark: archiver/parquet-readers).
 */
export const TEST_TOOLS = {
  /** hadolint, kubernetes-validate, kubeconform: test/unit/deploy. */
  deploy: 'scripts/ensure-deploy-tools.sh',
  /** promtool, prometheus, chromium: the observability and audit-html suites. */
  observability: 'scripts/ensure-observability-tools.sh',
  /** schemathesis, openapi-spec-validator: control/schemathesis. */
  api: 'scripts/ensure-api-tools.sh',
} as const;

export async function prepareTestTools(names: Array<keyof typeof TEST_TOOLS>): Promise<void> {
  if (process.env.TTLSTREAM_TEST_AUTOSTART === '0') return;
  const results = await Promise.allSettled(
    names.map((name) =>
      execFileAsync('bash', [resolve(ROOT_DIR, TEST_TOOLS[name])], {
        cwd: ROOT_DIR,
        maxBuffer: 64 * 1024 * 1024,
      }),
    ),
  );
  const failed = results.flatMap((r, i) =>
    r.status === 'rejected'
      ? [`${TEST_TOOLS[names[i]!]}: ${(r.reason as { stderr?: string }).stderr ?? ''}`]
      : [],
  );
  if (failed.length > 0) throw new Error(`preparing the tests' tools failed:\n${failed.join('\n')}`);
}
