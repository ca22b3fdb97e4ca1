import { stackStateDir, testLane } from './ports';

// Runs before each integration test file (setupFilesAfterEnv).

// jest 29 ignores `testTimeout` inside a project entry of jest.config.js, so the integration
// project sets it here: real services (a consumer group join, a broker restart) take seconds.
jest.setTimeout(120_000);

// test/jest/lane-environment.cjs gave this worker its lane before the sandbox was made; check that it did.
const worker = Number(process.env.JEST_WORKER_ID ?? '1');
if (
  process.env.TTLSTREAM_STACK_LANE !== String(testLane(worker - 1)) ||
  process.env.TTLSTREAM_LOCAL_STACK !== stackStateDir()
)
  throw new Error(
    `jest worker ${worker} runs without its lane (TTLSTREAM_STACK_LANE=${process.env.TTLSTREAM_STACK_LANE}): the integration project's testEnvironment must be test/jest/lane-environment.cjs`,
  );
