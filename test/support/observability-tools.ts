import { execFileSync } from 'node:child_process';

/**
 * The path of a binary the observability tests need (promtool, prometheus, chromium). A missing one fails the test
 * with the command that installs it: these tests must not pass by not running.
 */
export function requireBinary(name: 'promtool' | 'prometheus' | 'chromium'): string {
  try {
    return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error(
      `${name} is not on PATH: run \`bash scripts/ensure-observability-tools.sh\` to install it`,
    );
  }
}
