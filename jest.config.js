/** Two projects: `unit` needs no service and runs in seconds; `integration` runs against the
 * real Kafka, DynamoDB-API and S3 servers that test/support/global-setup.ts brings up if needed,
 * one stack per jest worker (test/jest/stacks.cjs). */
const { testStacks } = require('./test/jest/stacks.cjs');

const swc = ['@swc/jest', { jsc: { target: 'es2022' }, sourceMaps: 'inline' }];
// hyparquet and hyparquet-writer (the Parquet archive format) ship ES modules only: Node requires them as they are,
// Jest's module registry needs them as CommonJS, so swc transforms them as it transforms our TypeScript.
const transform = {
  '^.+\\.ts$': swc,
  '/node_modules/hyparquet(-writer)?/.+\\.js$': [
    '@swc/jest',
    { jsc: { target: 'es2022' }, module: { type: 'commonjs' }, sourceMaps: false },
  ],
};
const transformIgnorePatterns = ['/node_modules/(?!hyparquet(-writer)?/)'];

// The workers and global-setup.ts read the number of stacks from here: one place decides it.
const stacks = testStacks();
process.env.TTLSTREAM_TEST_STACKS = String(stacks);
// The suites start hundreds of node processes (commands, pipeline roles), each loading the same few MB of JavaScript:
// V8's code cache on disk saves about a quarter of each start's CPU, which the 2-vCPU runs are short of. The workers
// and everything they spawn inherit it. cli/main.ts turns it on for the product's own command as well.
process.env.NODE_COMPILE_CACHE ??= require('node:path').join(
  require('node:os').tmpdir(),
  'node-compile-cache',
);

module.exports = {
  // A client a test forgets to close (a kafkajs retry timer, a keep-alive socket) must not hang
  // CI after every test has reported.
  forceExit: true,
  maxWorkers: stacks,
  testSequencer: '<rootDir>/test/jest/sequencer.cjs',
  reporters: ['default', '<rootDir>/test/jest/timing-reporter.cjs'],
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      transform,
      transformIgnorePatterns,
      testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
      // The deploy linters, installed if missing (test/support/test-tools.ts).
      globalSetup: '<rootDir>/test/support/unit-global-setup.ts',
    },
    {
      displayName: 'integration',
      // Points each worker, and what it spawns, at its own stack (lane): test/jest/lane-environment.cjs.
      testEnvironment: '<rootDir>/test/jest/lane-environment.cjs',
      transform,
      transformIgnorePatterns,
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
      setupFilesAfterEnv: ['<rootDir>/test/support/integration-env.ts'],
    },
  ],
};
