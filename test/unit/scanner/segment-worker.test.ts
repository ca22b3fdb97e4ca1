import { DataError, ValidationError } from '../../../core/errors';
import type { LeaseHandle } from '../../../core/leases';
import { silentLogger } from '../../../core/logger';
import { ScanFailures } from '../../../scanner/failures';
import { runIndexShard } from '../../../scanner/index-worker';
import { runSegment, type ScannerContext } from '../../../scanner/segment-worker';

/** A scanner worker whose every look at the enabled tables fails with what `failure` makes of the attempt number. */
function workerOn(run: typeof runSegment, failure: (attempt: number) => unknown) {
  const controller = new AbortController();
  let looks = 0;
  const forgotten: string[] = [];
  const ctx = {
    logger: silentLogger,
    options: {},
    now: () => Date.now(),
    tables: { get: () => Promise.reject(failure(++looks)) },
    keySchemas: { forget: (table: string) => forgotten.push(table) },
    failures: new ScanFailures(Date.now),
  } as unknown as ScannerContext;
  const lease: LeaseHandle = {
    kind: 'scanner',
    name: 't#0',
    signal: controller.signal,
    assertValid: () => undefined,
  };
  return { work: run(ctx, 't', 0, lease), stop: () => controller.abort(), looks: () => looks, forgotten };
}

describe.each([
  ['a scan segment', runSegment],
  ['an expiry-index shard', runIndexShard],
])('%s retries by the error', (_name, run) => {
  it('retries a table that is gone, forgetting its key schema, until the lease ends', async () => {
    const worker = workerOn(run, () =>
      Object.assign(new Error('Requested resource not found'), { name: 'ResourceNotFoundException' }),
    );
    while (worker.looks() < 2) await new Promise((resolve) => setTimeout(resolve, 10));
    worker.stop();
    await expect(worker.work).resolves.toBeUndefined();
    expect(worker.forgotten).toContain('t');
  });

  it('ends the work at a non-retryable error and hands it, code and all, to the lease group', async () => {
    const worker = workerOn(run, (n) =>
      n === 1 ? new DataError('a corrupt settings row') : new Error('again?'),
    );
    await expect(worker.work).rejects.toMatchObject({ code: 'TTLSTREAM_DATA' });
    expect(worker.looks()).toBe(1);
    const invalid = workerOn(run, () => new ValidationError('ratePerSec must be positive'));
    await expect(invalid.work).rejects.toMatchObject({ code: 'TTLSTREAM_VALIDATION' });
  });
});
