import { execFileSync } from 'node:child_process';
import { stackStateDir, testLane } from '../support/ports';

/**
 * A test's process.env is jest's copy: a child spawned without an `env` option inherits the worker's real
 * environment. Both must name this worker's lane, or infra/ctl.sh run by stackCtl stops another worker's service.
 */
describe('the worker and its children use the same stack lane', () => {
  it('a child spawned without env sees the lane and the endpoints of the test itself', () => {
    const seen = execFileSync(
      process.execPath,
      [
        '-e',
        'process.stdout.write(JSON.stringify([process.env.TTLSTREAM_STACK_LANE, process.env.TTLSTREAM_LOCAL_STACK]))',
      ],
      { encoding: 'utf8' },
    );
    expect(JSON.parse(seen)).toEqual([
      String(testLane(Number(process.env.JEST_WORKER_ID ?? '1') - 1)),
      stackStateDir(),
    ]);
  });
});
