import { stackLane, stackStateDir, testLaneBase, testStacks } from './ports';

// Runs before each integration test file (setupFilesAfterEnv).

// jest 29 ignores `testTimeout` inside a project entry of jest.config.js, so the integration
// project sets it here: real services (a consumer group join, a broker restart) take seconds.
jest.setTimeout(120_000);

// One stack per jest worker (jest.config.js runs as many workers as TTLSTREAM_TEST_STACKS): worker N gets lane N-1,
// so a suite that restarts or degrades a service (a Kafka restart, toxics on the stack's proxy) never disturbs a
// suite running beside it, and every suite can run side by side with every other. A run in band is worker 1: lane 0.
// TTLSTREAM_TEST_LANE_BASE=B shifts that to lane B + N - 1 (ports.ts testLaneBase), for a run beside another one.
const worker = Number(process.env.JEST_WORKER_ID ?? '1');
if (worker > testStacks())
  throw new Error(
    `jest worker ${worker} has no stack of its own: TTLSTREAM_TEST_STACKS=${testStacks()} (jest.config.js runs that many workers)`,
  );
process.env.TTLSTREAM_STACK_LANE = String(testLaneBase() + worker - 1);
stackLane(); // validates

// The tests talk to the local stack infra/up.sh started (global-setup.ts): commands and spawned processes read
// its endpoints file only because this names it (core/config.ts chooseStackEndpoints). Their "endpoints: ..."
// line is off, as tests read stderr for what they check; test/integration/cli/endpoints.test.ts checks the line.
// TTLSTREAM_STATE_DIR too, so what finds the stack by itself (infra/up.sh, `ttlstream demo`) finds this lane's.
const stateDir = stackStateDir();
process.env.TTLSTREAM_STATE_DIR = stateDir;
process.env.TTLSTREAM_LOCAL_STACK = stateDir;
process.env.TTLSTREAM_QUIET ??= '1';
