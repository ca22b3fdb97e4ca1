import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { FollowedTable } from '../control/settings-store';
import type { Logger } from '../core/logger';
import { errorLabel, metrics } from '../core/metrics';
import type { CheckpointStore, TableCheckpoints } from './checkpoints';
import { planShards, shardKey, type Checkpoint, type StreamInfo } from './lineage';
import type { StreamLossSink } from './loss';
import type { ShardTask } from './shard-reader';
import { fixOf, tableStreams, type StreamProblem, type TableStreams } from './source';

export interface DiscoveryDeps {
  ddb: DynamoDBClient;
  streams: DynamoDBStreamsClient;
  checkpoints: CheckpointStore;
  losses: StreamLossSink;
  followed: () => Promise<FollowedTable[]>;
  logger: Logger;
  startPosition: 'trim-horizon' | 'latest';
  now?: () => number;
}

/** The lease name of a shard: table, stream label and shard id (none of them holds a '/'). */
export function unitName(table: string, label: string, shardId: string): string {
  return `${table}/${label}/${shardId}`;
}

/**
 * One round of discovery: every followed table's streams and shards, its checkpoints, the shards that may be read now
 * (streams/lineage.ts), losses reported, and checkpoints of shards gone from the stream forgotten. A table whose round
 * fails keeps its previous shards, so a passing DescribeStream error does not hand their leases away.
 */
export class Discovery {
  private tasks = new Map<string, ShardTask>();
  private problems = new Map<string, StreamProblem | undefined>();
  private readonly now: () => number;
  private roundAt = 0;
  private running: Promise<void> | undefined;

  constructor(private readonly deps: DiscoveryDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** The shards to lease, as of the last round. */
  units(): string[] {
    return [...this.tasks.keys()];
  }

  task(unit: string): ShardTask | undefined {
    return this.tasks.get(unit);
  }

  /** The problem of each followed table's current stream, as of the last round (undefined: none). */
  problem(table: string): StreamProblem | undefined {
    return this.problems.get(table);
  }

  /** A round, unless the last one ended less than `maxAgeMs` ago; one at a time, whoever asks. */
  async fresh(maxAgeMs: number): Promise<void> {
    if (this.now() - this.roundAt < maxAgeMs) return;
    this.running ??= this.round().finally(() => {
      this.roundAt = this.now();
      this.running = undefined;
    });
    await this.running;
  }

  /** The next `fresh` runs a round (a shard ended: its children may be read now). */
  invalidate(): void {
    this.roundAt = 0;
  }

  async round(): Promise<void> {
    const followed = await this.deps.followed();
    const stored = await this.deps.checkpoints.readAll();
    const next = new Map<string, ShardTask>();
    for (const { table, draining } of followed) {
      try {
        for (const t of await this.table(table, draining, stored.get(table) ?? { checkpoints: new Map() }))
          next.set(t.unit, t);
      } catch (err) {
        metrics.streamsReadErrors.inc({ table, operation: 'discover', error: errorLabel(err) });
        this.deps.logger.warn(
          { table, err },
          'could not list the stream shards of a followed table; trying again',
        );
        for (const [unit, t] of this.tasks) if (t.table === table) next.set(unit, t);
      }
    }
    this.tasks = next;
  }

  private async table(table: string, draining: boolean, stored: TableCheckpoints): Promise<ShardTask[]> {
    const { deps } = this;
    const found = await tableStreams(deps.ddb, deps.streams, table, stored.follow?.arns ?? []);
    this.noteProblem(table, draining || !found.exists ? undefined : found.problem);
    const arns = found.streams.filter((s) => !s.gone).map((s) => s.arn);
    const checkpoints = new Map(stored.checkpoints);
    if (!stored.follow && deps.startPosition === 'latest')
      await this.startAtLatest(table, found, checkpoints);
    const known = new Set(stored.follow?.arns ?? []);
    if (!stored.follow || arns.some((a) => !known.has(a)))
      await deps.checkpoints.remember(table, arns, this.now());
    const plan = planShards(found.streams, checkpoints);
    for (const lost of plan.lost) {
      const gone = found.streams.find((s) => s.arn === lost.arn)?.gone === true;
      await deps.losses.report({ ...lost, table, reason: gone ? 'stream-gone' : 'shard-gone' });
      // Reported once: the checkpoint now says the shard is over.
      const over: Checkpoint = {
        ...(lost.after !== undefined ? { sequenceNumber: lost.after } : {}),
        ended: true,
      };
      await deps.checkpoints.save(table, lost.label, lost.shardId, over);
      checkpoints.set(shardKey(lost.label, lost.shardId), over);
    }
    await this.forgetGone(table, found.streams, checkpoints);
    return plan.readable.map((r) => {
      const shard = found.streams.find((s) => s.arn === r.arn)?.shards.find((s) => s.shardId === r.shardId);
      return {
        ...r,
        table,
        unit: unitName(table, r.label, r.shardId),
        closed: shard?.closed ?? false,
        checkpoint: checkpoints.get(shardKey(r.label, r.shardId)),
      };
    });
  }

  /**
   * A table followed for the first time with `streams.startPosition: latest`: closed shards are skipped (ended) and
   * open ones start at LATEST, so only what comes after is published.
   */
  private async startAtLatest(
    table: string,
    found: TableStreams,
    checkpoints: Map<string, Checkpoint>,
  ): Promise<void> {
    for (const stream of found.streams)
      for (const shard of stream.shards) {
        const cp: Checkpoint = shard.closed ? { ended: true } : { ended: false, latest: true };
        await this.deps.checkpoints.save(table, stream.label, shard.shardId, cp);
        checkpoints.set(shardKey(stream.label, shard.shardId), cp);
      }
  }

  /**
   * Checkpoints of shards read to their end that the stream no longer lists, and ARNs of streams that are gone with
   * nothing left to read: the control table keeps what can still matter only.
   */
  private async forgetGone(
    table: string,
    streams: StreamInfo[],
    checkpoints: Map<string, Checkpoint>,
  ): Promise<void> {
    const gone: string[] = [];
    for (const s of streams) {
      const listed = new Set(s.shards.map((x) => x.shardId));
      const prefix = `${s.label}/`;
      let left = 0;
      for (const [key, cp] of checkpoints) {
        if (!key.startsWith(prefix)) continue;
        const shardId = key.slice(prefix.length);
        if (listed.has(shardId) || !cp.ended) left += 1;
        else await this.deps.checkpoints.forget(table, s.label, shardId);
      }
      if (s.gone && left === 0) gone.push(s.arn);
    }
    await this.deps.checkpoints.dropArns(table, gone);
  }

  private noteProblem(table: string, problem: StreamProblem | undefined): void {
    if (problem !== undefined && this.problems.get(table) !== problem)
      this.deps.logger.error({ table, problem }, `table ${table}: ${fixOf(problem, table)}`);
    this.problems.set(table, problem);
    for (const p of ['stream-off', 'no-old-image'] as const)
      metrics.streamsProblem.set({ table, problem: p }, problem === p ? 1 : 0);
  }
}
