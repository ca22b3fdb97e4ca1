// Runs before each integration test file (setupFilesAfterEnv).

// jest 29 ignores `testTimeout` inside a project entry of jest.config.js, so the integration
// project sets it here: real services (a consumer group join, a broker restart) take seconds.
jest.setTimeout(120_000);

// The AWS SDK warns once per process that it will need Node 22 from 2027; on Node 20 that is
// noise in every test file's output.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
