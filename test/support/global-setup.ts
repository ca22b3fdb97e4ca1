import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import {
  portOpen,
  ROOT_DIR,
  runDir,
  STACK_SERVICES,
  stackPort,
  stackStateDir,
  testLanes,
  testStacks,
  type StackService,
} from './ports';

/** Read by global-teardown.ts, which jest runs in the same process. */
export interface StackSetupState {
  /** The lanes this run uses, and per lane (same index) the services it started. */
  lanes: number[];
  startedByUs: StackService[][];
  userFile: string;
}

/** What this reads of jest 29's global config (its @jest/types is not the one hoisted to node_modules). */
interface JestGlobalConfig {
  maxWorkers: number;
  testPathPattern?: string;
}

declare global {
  var __ttlstreamStack: StackSetupState | undefined;
}

const execFileAsync = promisify(execFile);

/** The environment of lane `lane`'s stack (infra/lib.sh TTLSTREAM_STACK_LANE). */
export function laneEnv(lane: number): NodeJS.ProcessEnv {
  return { ...process.env, TTLSTREAM_STACK_LANE: String(lane) };
}

/** How many integration suites this run selected (at least 1). */
function suitesToRun(globalConfig: JestGlobalConfig): number {
  const pattern = globalConfig.testPathPattern ? new RegExp(globalConfig.testPathPattern, 'i') : undefined;
  const files = readdirSync(resolve(ROOT_DIR, 'test', 'integration'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => resolve(ROOT_DIR, 'test', 'integration', f));
  return Math.max(1, pattern ? files.filter((f) => pattern.test(f)).length : files.length);
}

async function downServices(lane: number): Promise<StackService[]> {
  const env = laneEnv(lane);
  const down: StackService[] = [];
  for (const service of STACK_SERVICES) if (!(await portOpen(stackPort(service, env)))) down.push(service);
  return down;
}

/**
 * Integration tests run against the real services, one stack per jest worker (TTLSTREAM_TEST_STACKS lanes,
 * integration-env.ts). If a lane's services are down, bring them up with infra/up.sh (the lanes side by side) and
 * remember which this run started, so teardown stops only those. TTLSTREAM_TEST_AUTOSTART=0 turns the starting off.
 */
export default async function globalSetup(globalConfig: JestGlobalConfig): Promise<void> {
  // jest runs no more workers than suites: one suite (a developer's single file) needs lane 0 only.
  const lanes = testLanes(Math.min(testStacks(), globalConfig.maxWorkers, suitesToRun(globalConfig)));
  const down = await Promise.all(lanes.map(downServices));

  const autostart = process.env.TTLSTREAM_TEST_AUTOSTART !== '0';
  if (!autostart) {
    // For checking that tests fail when a service is down, and for CI, where the stacks were
    // started explicitly and a dead service must fail the run rather than be quietly restarted.
    lanes.forEach((lane, i) => {
      if (down[i]!.length > 0)
        process.stderr.write(
          `\n[test stack] lane ${lane}: ${down[i]!.join(', ')} down and TTLSTREAM_TEST_AUTOSTART=0: not starting; tests that need them will fail\n`,
        );
    });
  } else {
    const starting = lanes.filter(
      (lane, i) => down[i]!.length > 0 || !existsSync(join(stackStateDir(laneEnv(lane)), 'endpoints.json')),
    );
    if (starting.length > 0)
      process.stderr.write(`\n[test stack] running infra/up.sh for lane(s) ${starting.join(', ')}\n`);
    const results = await Promise.allSettled(
      starting.map((lane) =>
        execFileAsync('bash', [resolve(ROOT_DIR, 'infra', 'up.sh')], {
          cwd: ROOT_DIR,
          env: laneEnv(lane),
          maxBuffer: 64 * 1024 * 1024,
        }),
      ),
    );
    const failed = results.flatMap((r, i) =>
      r.status === 'rejected'
        ? [`lane ${starting[i]}: ${(r.reason as { stderr?: string }).stderr ?? String(r.reason)}`]
        : [],
    );
    if (failed.length > 0)
      throw new Error(
        `infra/up.sh failed; integration tests need Kafka, DynamoDB and S3 in every lane:\n${failed.join('\n')}`,
      );
  }

  // Several test runs may share the stacks; each marks itself so the last one out decides about stopping.
  const users = resolve(runDir(), 'test-users');
  mkdirSync(users, { recursive: true });
  const userFile = resolve(users, String(process.pid));
  writeFileSync(userFile, new Date().toISOString());
  globalThis.__ttlstreamStack = { lanes, startedByUs: autostart ? down : lanes.map(() => []), userFile };
}
