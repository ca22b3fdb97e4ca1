/**
 * How many stacks, and so jest workers, an integration run uses: one stack per worker (test/support/integration-env.ts
 * gives worker N lane N-1), so any suite may stop, restart or degrade its stack's services beside any other suite.
 * On 2 cores the suites keep both cores busy with three side by side, yet a fourth still shortens the run: a suite
 * waiting out a lease or a rebalance leaves the CPU to the others (the same code: 1,100 s on three stacks, 1,003 s
 * on four; docs/decisions/0026).
 */
const DEFAULT_TEST_STACKS = 4;

function testStacks(env = process.env) {
  const raw = env.TTLSTREAM_TEST_STACKS ?? String(DEFAULT_TEST_STACKS);
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 10)
    throw new Error(`TTLSTREAM_TEST_STACKS=${raw}: expected a number of stacks from 1 to 10`);
  return n;
}

/**
 * The lane of jest worker 1 (`TTLSTREAM_TEST_FIRST_LANE`, default 0): worker N runs on lane first + N - 1, so a run
 * can keep off the lanes another run on the same machine is using (`TTLSTREAM_TEST_FIRST_LANE=7 npx jest file`).
 */
function firstTestLane(env = process.env) {
  const raw = env.TTLSTREAM_TEST_FIRST_LANE ?? '0';
  if (!/^[0-9]$/.test(raw))
    throw new Error(`TTLSTREAM_TEST_FIRST_LANE=${raw}: expected a lane number from 0 to 9`);
  return Number(raw);
}

/** The lane of the `index`-th stack of a test run (0-based: jest worker index + 1), at most 9. */
function testLane(index, env = process.env) {
  const lane = firstTestLane(env) + index;
  if (lane > 9)
    throw new Error(
      `TTLSTREAM_TEST_FIRST_LANE=${firstTestLane(env)} leaves no lane for test stack ${index + 1} (lanes go up to 9): lower it or TTLSTREAM_TEST_STACKS`,
    );
  return lane;
}

module.exports = { DEFAULT_TEST_STACKS, testStacks, firstTestLane, testLane };
