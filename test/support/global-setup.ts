import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { stackEndpointsPath } from '../../core/config';
import { portOpen, ROOT_DIR, runDir, STACK_SERVICES, stackPort, type StackService } from './ports';

/** Read by global-teardown.ts, which jest runs in the same process. */
export interface StackSetupState {
  startedByUs: StackService[];
  userFile: string;
}

declare global {
  var __ttlstreamStack: StackSetupState | undefined;
}

/**
 * Integration tests run against the real services. If any is down, bring the stack up with
 * infra/up.sh and remember which services this run started, so teardown stops only those.
 * TTLSTREAM_TEST_AUTOSTART=0 turns the starting off.
 */
export default async function globalSetup(): Promise<void> {
  const down: StackService[] = [];
  for (const service of STACK_SERVICES) if (!(await portOpen(stackPort(service)))) down.push(service);

  const autostart = process.env.TTLSTREAM_TEST_AUTOSTART !== '0';
  if (!autostart) {
    // For checking that tests fail when a service is down, and for CI, where the stack was
    // started explicitly and a dead service must fail the run rather than be quietly restarted.
    if (down.length > 0)
      process.stderr.write(
        `\n[test stack] ${down.join(', ')} down and TTLSTREAM_TEST_AUTOSTART=0: not starting; tests that need them will fail\n`,
      );
  } else if (down.length > 0 || !existsSync(stackEndpointsPath(ROOT_DIR))) {
    process.stderr.write(
      `\n[test stack] ${down.length > 0 ? `${down.join(', ')} down` : 'no endpoints file'}: running infra/up.sh\n`,
    );
    try {
      execFileSync('bash', [resolve(ROOT_DIR, 'infra', 'up.sh')], {
        cwd: ROOT_DIR,
        stdio: ['ignore', 'ignore', 'inherit'],
      });
    } catch {
      throw new Error(
        'infra/up.sh failed (its messages are above); integration tests need Kafka, DynamoDB and S3',
      );
    }
  }

  // Several test runs may share one stack; each marks itself so the last one out decides about stopping.
  const users = resolve(runDir(), 'test-users');
  mkdirSync(users, { recursive: true });
  const userFile = resolve(users, String(process.pid));
  writeFileSync(userFile, new Date().toISOString());
  globalThis.__ttlstreamStack = { startedByUs: autostart ? down : [], userFile };
}
