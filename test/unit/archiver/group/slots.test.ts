import { PartitionSlots } from '../../../../archiver/group/slots';
import type { Recovery } from '../../../../archiver/group/recovery';
import { silentLogger } from '../../../../core/logger';
import { metrics } from '../../../../core/metrics';

/** Recovery that finds nothing to do: what is under test is what a revoked partition leaves behind. */
const recovery = { recoverWithRetry: () => Promise.resolve(null) } as unknown as Recovery;

describe('PartitionSlots: a revoked partition', () => {
  it("drops its per-partition gauges, a lineage mismatch among them: the partition's new owner reports it", async () => {
    const slots = new PartitionSlots(silentLogger, recovery);
    const kept = { topic: 't', partition: '0' };
    const revoked = { topic: 't', partition: '1' };
    slots.onAssignment({ t: [0, 1] });
    for (const labels of [kept, revoked]) {
      metrics.archiveLineageMismatch.set(labels, 1);
      metrics.recordsBehind.set(labels, 5);
      metrics.oldestUnarchivedSeconds.set(labels, 60);
    }
    slots.onAssignment({ t: [0] });
    for (const gauge of [
      metrics.archiveLineageMismatch,
      metrics.recordsBehind,
      metrics.oldestUnarchivedSeconds,
    ]) {
      const partitions = (await gauge.get()).values
        .filter((v) => v.labels.topic === 't')
        .map((v) => v.labels.partition);
      expect(partitions).toEqual(['0']);
    }
  });
});
