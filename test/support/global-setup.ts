import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { BUILT, testsRunBuilt } from './entrypoints';
import { prepareTestTools } from './test-tools';
import { clusterDownPorts } from './cluster';
import {
  portOpen,
  ROOT_DIR,
  runDir,
  STACK_SERVICES,
  stackPort,
  stackStateDir,
  testLane,
  testStacks,
  type StackService,
} from './ports';

/** Read by global-teardown.ts, which jest runs in the same process. */
export interface StackSetupState {
  /** Per lane of this run, the services it started. */
  startedByUs: Array<{ lane: number; services: StackService[] }>;
  /** Whether this run started the three-broker cluster (infra/cluster.sh). */
  clusterStartedByUs: boolean;
  userFile: string;
}

/** What this reads of jest 29's global config (its @jest/types is not the one hoisted to node_modules). */
interface JestGlobalConfig {
  maxWorkers: number;
  testPathPattern?: string;
  runTestsByPath?: boolean;
  nonFlagArgs?: string[];
}

/** The suites that need the three-broker cluster of infra/cluster.sh besides their lane. */
const CLUSTER_SUITES = [resolve(ROOT_DIR, 'test', 'integration', 'faults', 'cluster.test.ts')];

declare global {
  var __ttlstreamStack: StackSetupState | undefined;
}

const execFileAsync = promisify(execFile);

/** The environment of lane `lane`'s stack (infra/lib.sh TTLSTREAM_STACK_LANE). */
export function laneEnv(lane: number): NodeJS.ProcessEnv {
  return { ...process.env, TTLSTREAM_STACK_LANE: String(lane) };
}

/** The integration suites this run selected (by --runTestsByPath, a path pattern, or all of them). */
function selectedSuites(globalConfig: JestGlobalConfig): string[] {
  if (globalConfig.runTestsByPath && (globalConfig.nonFlagArgs ?? []).length > 0)
    return (globalConfig.nonFlagArgs ?? []).map((f) => resolve(f));
  const pattern = globalConfig.testPathPattern ? new RegExp(globalConfig.testPathPattern, 'i') : undefined;
  const files = readdirSync(resolve(ROOT_DIR, 'test', 'integration'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => resolve(ROOT_DIR, 'test', 'integration', f));
  return pattern ? files.filter((f) => pattern.test(f)) : files;
}

/**
 * The three-broker cluster, when a selected suite needs it and it is down: started beside the lanes (infra/cluster.sh
 * up); true if this run started it. The suite fails with how to start it when it is down all the same.
 */
async function startClusterIfNeeded(suites: string[]): Promise<boolean> {
  if (!suites.some((f) => CLUSTER_SUITES.includes(f))) return false;
  if ((await clusterDownPorts()).length === 0) return false;
  process.stderr.write('\n[test stack] running infra/cluster.sh up (the three-broker cluster)\n');
  await execFileAsync('bash', [resolve(ROOT_DIR, 'infra', 'cluster.sh'), 'up'], {
    cwd: ROOT_DIR,
    maxBuffer: 16 * 1024 * 1024,
  });
  return true;
}

async function downServices(lane: number): Promise<StackService[]> {
  const env = laneEnv(lane);
  const down: StackService[] = [];
  for (const service of STACK_SERVICES) if (!(await portOpen(stackPort(service, env)))) down.push(service);
  return down;
}

/** What `npm run build` compiles (tsconfig.build.json's include: index.ts and the product folders). */
function builtSources(): string[] {
  const config = JSON.parse(readFileSync(resolve(ROOT_DIR, 'tsconfig.build.json'), 'utf8')) as {
    include: string[];
  };
  return config.include;
}

function newestSourceMs(): number {
  let newest = 0;
  for (const entry of builtSources()) {
    const path = resolve(ROOT_DIR, entry);
    const files = entry.endsWith('.ts')
      ? [path]
      : readdirSync(path, { recursive: true, encoding: 'utf8' })
          .filter((f) => f.endsWith('.ts'))
          .map((f) => resolve(path, f));
    for (const f of files) newest = Math.max(newest, statSync(f).mtimeMs);
  }
  return newest;
}

/**
 * TTLSTREAM_TEST_FROM=dist (entrypoints.ts): the built command must be newer than every source, or the suites would
 * test old code; the pipeline process of the fault suites, a test file `npm run build` leaves out, is compiled
 * beside it (esbuild, one file, its imports resolved to the built modules next to it).
 */
async function prepareBuiltEntrypoints(): Promise<void> {
  const cli = resolve(ROOT_DIR, BUILT.cli);
  if (!existsSync(cli) || statSync(cli).mtimeMs < newestSourceMs())
    throw new Error(
      `TTLSTREAM_TEST_FROM=dist: ${BUILT.cli} is missing or older than the sources: run npm run build`,
    );
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const esbuild = require('esbuild') as typeof import('esbuild');
  // Bundled with the test/support modules it imports (npm run build leaves them out too); the product modules
  // (`../../<area>`, the same path from dist/test/support) and packages stay imports of the built code.
  const result = await esbuild.build({
    entryPoints: [resolve(ROOT_DIR, 'test', 'support', 'pipeline-process.ts')],
    outfile: resolve(ROOT_DIR, BUILT.pipeline),
    bundle: true,
    packages: 'external',
    plugins: [
      {
        name: 'product-modules-external',
        setup(build) {
          build.onResolve({ filter: /^\.\.\/\.\.\// }, (args) => ({ path: args.path, external: true }));
        },
      },
    ],
    format: 'cjs',
    platform: 'node',
    target: 'node24',
    logLevel: 'warning',
  });
  if (result.errors.length > 0) throw new Error(`esbuild of ${BUILT.pipeline} failed`);
}

/**
 * Integration tests run against the real services, one stack per jest worker (TTLSTREAM_TEST_STACKS lanes,
 * integration-env.ts). If a lane's services are down, bring them up with infra/up.sh (the lanes side by side) and
 * remember which this run started, so teardown stops only those. TTLSTREAM_TEST_AUTOSTART=0 turns the starting off.
 */
export default async function globalSetup(globalConfig: JestGlobalConfig): Promise<void> {
  if (testsRunBuilt()) await prepareBuiltEntrypoints();
  // jest runs no more workers than suites: one suite (a developer's single file) needs lane 0 only (or the lane
  // TTLSTREAM_TEST_FIRST_LANE names: integration-env.ts gives worker N lane testLane(N-1)).
  const suites = selectedSuites(globalConfig);
  const count = Math.min(testStacks(), globalConfig.maxWorkers, Math.max(1, suites.length));
  const lanes = [...Array(count).keys()].map((i) => testLane(i));
  const downList = await Promise.all(lanes.map(downServices));
  const down = new Map(lanes.map((lane, i) => [lane, downList[i] ?? []]));

  const autostart = process.env.TTLSTREAM_TEST_AUTOSTART !== '0';
  let clusterStartedByUs = false;
  if (!autostart) {
    // For checking that tests fail when a service is down, and for CI, where the stacks were
    // started explicitly and a dead service must fail the run rather than be quietly restarted.
    lanes.forEach((lane) => {
      if (down.get(lane)!.length > 0)
        process.stderr.write(
          `\n[test stack] lane ${lane}: ${down.get(lane)!.join(', ')} down and TTLSTREAM_TEST_AUTOSTART=0: not starting; tests that need them will fail\n`,
        );
    });
  } else {
    const starting = lanes.filter(
      (lane) =>
        down.get(lane)!.length > 0 || !existsSync(join(stackStateDir(laneEnv(lane)), 'endpoints.json')),
    );
    if (starting.length > 0)
      process.stderr.write(`\n[test stack] running infra/up.sh for lane(s) ${starting.join(', ')}\n`);
    // Beside the stacks; its failure is reported after theirs (and never left unhandled).
    const tools = prepareTestTools(['observability', 'api']).then(
      () => undefined,
      (err: unknown) => err,
    );
    // Beside the lanes too; its failure, like the tools', is reported after theirs.
    const cluster = startClusterIfNeeded(suites).then(
      (started) => ({ started }),
      (err: unknown) => ({ err }),
    );
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
    const toolsFailed = await tools;
    if (toolsFailed !== undefined) throw toolsFailed;
    const clusterStart = await cluster;
    if ('err' in clusterStart) throw clusterStart.err;
    clusterStartedByUs = clusterStart.started;
  }

  // Several test runs may share the stacks; each marks itself so the last one out decides about stopping.
  const users = resolve(runDir(), 'test-users');
  mkdirSync(users, { recursive: true });
  const userFile = resolve(users, String(process.pid));
  writeFileSync(userFile, new Date().toISOString());
  globalThis.__ttlstreamStack = {
    startedByUs: lanes.map((lane) => ({ lane, services: autostart ? down.get(lane)! : [] })),
    clusterStartedByUs,
    userFile,
  };
}
