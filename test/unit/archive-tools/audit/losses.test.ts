import { acknowledgeLoss, acknowledgeStreamLoss } from '../../../../archive-tools/loss-ack';
import { LossReporter } from '../../../../archiver/loss';
import { lossesInScope } from '../../../../archive-tools/audit';
import { silentLogger } from '../../../../core/logger';
import { ArchiveStreamLosses } from '../../../../streams/loss';
import { MemoryStorage } from '../../../support/archive-fixture';

describe('lossesInScope: the losses an audit of a table and window must name', () => {
  it("the table's stream losses and its topic's Kafka losses detected since the window began, and which are acknowledged", async () => {
    const storage = new MemoryStorage();
    const t0 = Date.now();
    await new LossReporter(storage, silentLogger).report('ttlstream.remove', 2, 10n, 19n, 'assignment');
    await new LossReporter(storage, silentLogger).report('other.topic', 0, 0n, 4n, 'monitor');
    const streams = new ArchiveStreamLosses(storage, silentLogger);
    const shard = {
      arn: 'arn:aws:dynamodb:us-east-1:123456789012:table/sessions/stream/2026-12-07T00:00:00.000',
      label: '2026-12-07T00:00:00.000',
      reason: 'trimmed' as const,
    };
    await streams.report({ ...shard, table: 'sessions', shardId: 's-1', after: '100000000000000000007' });
    await streams.report({ ...shard, table: 'carts', shardId: 's-2' });

    const scope = { table: 'sessions', topic: 'ttlstream.remove', fromMs: t0 - 1000 };
    const losses = await lossesInScope(storage, scope);
    expect(losses.map((l) => [l.kind, l.acknowledged, l.detail])).toEqual([
      [
        'kafka',
        false,
        'ttlstream.remove partition 2, offsets 10-19 (10 records): aged out of Kafka unarchived',
      ],
      [
        'stream',
        false,
        'DynamoDB stream shard s-1, after 100000000000000000007: left the stream unread (trimmed)',
      ],
    ]);
    // Losses detected before the window began are not the window's.
    expect(await lossesInScope(storage, { ...scope, fromMs: Date.now() + 1000 })).toEqual([]);

    await acknowledgeLoss(storage, { topic: 'ttlstream.remove', actor: 'cli:t', dryRun: false });
    await acknowledgeStreamLoss(storage, { table: 'sessions', actor: 'cli:t', dryRun: false });
    expect((await lossesInScope(storage, scope)).map((l) => l.acknowledged)).toEqual([true, true]);
  });
});
