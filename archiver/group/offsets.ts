import type { Consumer } from 'kafkajs';
import { committedOffsetOf } from '../../archive/history';
import type { AdminClient } from './admin';
import type { GroupState } from './state';
import { NotRunningError } from '../../core/errors';

/**
 * The group's offsets. The archiver never auto-commits: a partition worker commits a roll's end
 * only once its manifest is sealed `complete` (writer.ts), and fences each manifest write with a
 * commit of the roll's start; both come through commit() here.
 */
export class OffsetManager {
  constructor(
    private readonly groupId: string,
    private readonly admin: AdminClient,
    private readonly state: GroupState,
  ) {}

  async committed(topic: string, partition: number): Promise<bigint | null> {
    const groupId = this.groupId;
    const res = await this.admin.with((a) => a.fetchOffsets({ groupId, topics: [topic] }));
    const p = res.find((t) => t.topic === topic)?.partitions.find((x) => x.partition === partition);
    return committedOffsetOf(p?.offset);
  }

  /**
   * Commit through `consumer`, the one the partition was recovered with, and only while it is still
   * the member's consumer: a worker of a replaced consumer must neither fence nor commit with the new one.
   */
  async commit(topic: string, partition: number, offset: bigint, consumer: Consumer | null): Promise<void> {
    if (!consumer || consumer !== this.state.consumer)
      throw new NotRunningError('no consumer to commit with');
    await consumer.commitOffsets([{ topic, partition, offset: offset.toString() }]);
  }
}
