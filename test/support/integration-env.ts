import { dirname } from 'node:path';
import { stackEndpointsPath } from '../../core/config';
import { ROOT_DIR } from './ports';

// Runs before each integration test file (setupFilesAfterEnv).

// jest 29 ignores `testTimeout` inside a project entry of jest.config.js, so the integration
// project sets it here: real services (a consumer group join, a broker restart) take seconds.
jest.setTimeout(120_000);

// The tests talk to the local stack infra/up.sh started (global-setup.ts): commands and spawned processes read
// its endpoints file only because this names it (core/config.ts chooseStackEndpoints). Their "endpoints: ..."
// line is off, as tests read stderr for what they check; test/integration/cli/endpoints.test.ts checks the line.
process.env.TTLSTREAM_LOCAL_STACK ??= dirname(stackEndpointsPath(ROOT_DIR));
process.env.TTLSTREAM_QUIET ??= '1';
