// Runs before each integration test file (setupFilesAfterEnv).

// jest 29 ignores `testTimeout` inside a project entry of jest.config.js, so the integration
// project sets it here: real services (a consumer group join, a broker restart) take seconds.
jest.setTimeout(120_000);
