/** Two projects: `unit` needs no service and runs in seconds; `integration` runs against the
 * real Kafka, DynamoDB-API and S3 servers that test/global-setup.ts brings up if needed. */
const transform = { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' }, sourceMaps: 'inline' }] };

module.exports = {
  // On 2 cores jest runs the suites in its own process; a client a test forgets to close (a kafkajs
  // retry timer, a keep-alive socket) must not hang CI after every test has reported.
  forceExit: true,
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
    },
    {
      displayName: 'integration',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
      setupFilesAfterEnv: ['<rootDir>/test/support/integration-env.ts'],
    },
  ],
};
