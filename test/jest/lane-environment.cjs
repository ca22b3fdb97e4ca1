const { resolve } = require('node:path');
const { TestEnvironment } = require('jest-environment-node');
const { testLane, testStacks } = require('./stacks.cjs');

const ROOT = resolve(__dirname, '..', '..');

/**
 * The variables that point a jest worker, and every process it spawns, at its own stack: worker N gets lane N-1
 * (infra/lib.sh TTLSTREAM_STACK_LANE; TTLSTREAM_TEST_FIRST_LANE=F shifts them all by F), so a suite that restarts or degrades a service never disturbs a suite running
 * beside it. A run in band is worker 1: lane 0. Mirrors test/support/ports.ts stackStateDir (test-lanes.test.ts).
 */
function laneVariables(env) {
  const worker = Number(env.JEST_WORKER_ID ?? '1');
  const stacks = testStacks(env);
  if (!Number.isInteger(worker) || worker < 1 || worker > stacks)
    throw new Error(
      `jest worker ${env.JEST_WORKER_ID} has no stack of its own: TTLSTREAM_TEST_STACKS=${stacks} (jest.config.js runs that many workers)`,
    );
  const lane = testLane(worker - 1, env);
  const base = resolve(ROOT, env.TTLSTREAM_STATE_DIR ?? '.ttlstream');
  const stateDir = lane === 0 || env.TTLSTREAM_STATE_DIR !== undefined ? base : resolve(base, `lane-${lane}`);
  // Commands and spawned processes read the stack's endpoints file only because TTLSTREAM_LOCAL_STACK names it
  // (core/config.ts chooseStackEndpoints); TTLSTREAM_STATE_DIR too, so what finds the stack by itself (infra/up.sh,
  // `ttlstream demo`) finds this lane's. The "endpoints: ..." line is off: tests read stderr for what they check.
  return {
    TTLSTREAM_STACK_LANE: String(lane),
    TTLSTREAM_STATE_DIR: stateDir,
    TTLSTREAM_LOCAL_STACK: stateDir,
    TTLSTREAM_QUIET: env.TTLSTREAM_QUIET ?? '1',
  };
}

/**
 * The integration project's environment. It sets the lane in the worker's own process.env, before the sandbox is
 * made: a test's `process.env` is a copy, and a child spawned without an `env` option (infra/ctl.sh from stackCtl,
 * a tmux server, Prometheus) inherits the worker's real environment, not the copy. Set only in the sandbox (as
 * setupFilesAfterEnv did), the lane reached the test's own clients while such children went to lane 0.
 */
class LaneEnvironment extends TestEnvironment {
  constructor(config, context) {
    Object.assign(process.env, laneVariables(process.env));
    muteKafkajsNegativeTimeoutWarning();
    super(config, context);
  }
}

/**
 * core/kafkajs-warnings.ts, for the worker's real process: Node's timers warn through it, not through the sandbox's
 * copy that createKafka patches, so a test's own kafkajs clients printed a TimeoutNegativeWarning into CI's log.
 */
function muteKafkajsNegativeTimeoutWarning() {
  if (process.emitWarning.ttlstreamMuted) return;
  const original = process.emitWarning.bind(process);
  const muted = (warning, ...rest) => {
    const name =
      warning instanceof Error ? warning.name : typeof rest[0] === 'string' ? rest[0] : rest[0]?.type;
    if (
      name === 'TimeoutNegativeWarning' &&
      /[\\/]kafkajs[\\/]src[\\/]network[\\/]requestQueue[\\/]/.test(new Error().stack ?? '')
    )
      return;
    original(warning, ...rest);
  };
  muted.ttlstreamMuted = true;
  process.emitWarning = muted;
}

module.exports = LaneEnvironment;
module.exports.laneVariables = laneVariables;
