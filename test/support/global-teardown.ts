import { execFileSync } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { laneEnv } from './global-setup';
import { ROOT_DIR } from './ports';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Stops only the services global-setup started, and not while another test run still uses them. */
export default async function globalTeardown(): Promise<void> {
  const state = globalThis.__ttlstreamStack;
  if (!state) return;
  globalThis.__ttlstreamStack = undefined;
  rmSync(state.userFile, { force: true });
  if (state.startedByUs.every(({ services }) => services.length === 0) && !state.clusterStartedByUs) return;

  const others = readdirSync(dirname(state.userFile))
    .filter((name) => name !== basename(state.userFile) && /^\d+$/.test(name))
    .filter((name) => alive(Number(name)));
  if (others.length > 0) {
    process.stderr.write(
      `[test stack] leaving the stacks running: test run(s) ${others.join(', ')} still use them\n`,
    );
    return;
  }
  if (state.clusterStartedByUs)
    execFileSync('bash', [resolve(ROOT_DIR, 'infra', 'cluster.sh'), 'down'], {
      cwd: ROOT_DIR,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  state.startedByUs.forEach(({ lane, services }) => {
    for (const service of services) {
      execFileSync('bash', [resolve(ROOT_DIR, 'infra', 'ctl.sh'), 'stop', service], {
        cwd: ROOT_DIR,
        env: laneEnv(lane),
        stdio: ['ignore', 'ignore', 'inherit'],
      });
    }
  });
}
