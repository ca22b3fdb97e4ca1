/**
 * Which shards of a table's streams may be read now: the pure rule of the streams role, tested over random split
 * trees (test/unit/streams/lineage.test.ts). DynamoDB Streams splits a shard into children; a child holds later
 * changes of the same items, so it is read only after its parent has been read to its end. A table whose stream was
 * turned off and on again has several streams (ARNs): an older one is read to its end before a newer one is begun.
 */

export interface ShardInfo {
  shardId: string;
  parentShardId?: string;
  /** The shard has an EndingSequenceNumber: it takes no more records (it may still hold unread ones). */
  closed: boolean;
}

export interface StreamInfo {
  arn: string;
  /** The stream's label (its creation time, ISO-8601): streams of a table are read in label order. */
  label: string;
  /** Shards as DescribeStream lists them; none when the stream is gone (trimmed after 24 hours, or its table dropped). */
  shards: ShardInfo[];
  /** DescribeStream no longer knows the stream: every shard of it is gone. */
  gone: boolean;
}

/** A shard's checkpoint: the last record published from it, and whether it was read to its end. */
export interface Checkpoint {
  sequenceNumber?: string;
  ended: boolean;
  /** Start at LATEST (a table first followed with `streams.startPosition: latest`) until a record is read. */
  latest?: boolean;
}

export interface ShardRef {
  arn: string;
  label: string;
  shardId: string;
}

export interface ShardPlan {
  /** Shards to read now, oldest stream first. */
  readable: ShardRef[];
  /**
   * Shards read part of the way whose rest is gone (DescribeStream no longer lists them): records after the checkpoint
   * left the stream unread. Reported as loss, then counted as done.
   */
  lost: Array<ShardRef & { after?: string }>;
}

/** The key of a shard in checkpoint maps: stream label and shard id (shard ids are unique within a stream). */
export function shardKey(label: string, shardId: string): string {
  return `${label}/${shardId}`;
}

/**
 * The plan for a table's streams (any order; read in label order) and its checkpoints. A shard is done when its
 * checkpoint says it was read to its end, or when it is gone. A shard may be read when it is not done, its parent is
 * done or not listed (trimmed before this follower saw it), and every shard of the older streams is done.
 */
export function planShards(
  streams: readonly StreamInfo[],
  checkpoints: ReadonlyMap<string, Checkpoint>,
): ShardPlan {
  const readable: ShardRef[] = [];
  const lost: ShardPlan['lost'] = [];
  let olderUnfinished = false;
  for (const stream of [...streams].sort((a, b) => (a.label < b.label ? -1 : a.label > b.label ? 1 : 0))) {
    lost.push(...lostShards(stream, checkpoints));
    const listed = new Map(stream.shards.map((s) => [s.shardId, s]));
    const done = (shardId: string): boolean =>
      !listed.has(shardId) || checkpoints.get(shardKey(stream.label, shardId))?.ended === true;
    const open = stream.shards.filter((s) => !done(s.shardId));
    if (!olderUnfinished)
      for (const s of open)
        if (s.parentShardId === undefined || done(s.parentShardId))
          readable.push({ arn: stream.arn, label: stream.label, shardId: s.shardId });
    if (open.length > 0) olderUnfinished = true;
  }
  return { readable, lost };
}

/** Checkpoints of this stream, read part of the way, whose shard is no longer listed. */
function lostShards(stream: StreamInfo, checkpoints: ReadonlyMap<string, Checkpoint>): ShardPlan['lost'] {
  const listed = new Set(stream.shards.map((s) => s.shardId));
  const prefix = `${stream.label}/`;
  const out: ShardPlan['lost'] = [];
  for (const [key, cp] of checkpoints) {
    if (!key.startsWith(prefix) || cp.ended) continue;
    const shardId = key.slice(prefix.length);
    if (listed.has(shardId)) continue;
    out.push({
      arn: stream.arn,
      label: stream.label,
      shardId,
      ...(cp.sequenceNumber !== undefined ? { after: cp.sequenceNumber } : {}),
    });
  }
  return out;
}
