import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DataError, LeaseLostError } from '../../../core/errors';
import type { LeaseHandle } from '../../../core/leases';
import { silentLogger } from '../../../core/logger';
import type { BatchContext } from '../../../producer/batch/runner';
import { runShard } from '../../../producer/shard-worker';

/** A shard's work on a DynamoDB client whose every request fails with what `failure` makes of the attempt number. */
function shardOn(failure: (attempt: number) => unknown) {
  const controller = new AbortController();
  let requests = 0;
  const ddb = {
    send: () => Promise.reject(failure(++requests)),
  } as unknown as DynamoDBClient;
  const ctx = {
    ddb,
    logger: silentLogger,
    options: { marksTable: 'marks', pollMs: 1, batchSize: 10, idleSweepMs: 1000 },
  } as unknown as BatchContext;
  const lease: LeaseHandle = {
    kind: 'producer',
    name: '0',
    signal: controller.signal,
    assertValid: () => undefined,
  };
  return { work: runShard(ctx, 0, lease), stop: () => controller.abort(), requests: () => requests };
}

describe('a shard worker retries by the error', () => {
  it('retries an error that says nothing of retrying (a plain Error) until the lease ends', async () => {
    const shard = shardOn(() => new Error('the request failed'));
    while (shard.requests() < 5) await new Promise((resolve) => setTimeout(resolve, 5));
    shard.stop();
    await expect(shard.work).resolves.toBeUndefined();
  });

  it('ends the work at a non-retryable error and hands it, code and all, to the lease group', async () => {
    const shard = shardOn(() => new DataError('a corrupt journal row'));
    await expect(shard.work).rejects.toMatchObject({ code: 'TTLSTREAM_DATA' });
    expect(shard.requests()).toBe(1);
  });

  it('ends quietly when the lease is lost', async () => {
    const shard = shardOn(() => new LeaseLostError('taken over'));
    await expect(shard.work).resolves.toBeUndefined();
    expect(shard.requests()).toBe(1);
  });
});
