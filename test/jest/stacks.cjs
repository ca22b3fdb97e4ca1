/**
 * How many stacks, and so jest workers, an integration run uses: one stack per worker (test/support/integration-env.ts
 * gives worker N lane N-1), so any suite may stop, restart or degrade its stack's services beside any other suite.
 * On 2 cores the suites mostly wait for leases, rebalances and timeouts; three side by side keep both cores busy
 * without starving the time-bound assertions (measured in the issue 22 closing note).
 */
const DEFAULT_TEST_STACKS = 3;

function testStacks(env = process.env) {
  const raw = env.TTLSTREAM_TEST_STACKS ?? String(DEFAULT_TEST_STACKS);
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 10)
    throw new Error(`TTLSTREAM_TEST_STACKS=${raw}: expected a number of stacks from 1 to 10`);
  return n;
}

module.exports = { DEFAULT_TEST_STACKS, testStacks };
