import {
  TrimmedDataAccessException,
  type _Record as StreamsApiRecord,
} from '@aws-sdk/client-dynamodb-streams';
import fc from 'fast-check';
import type { LeaseHandle } from '../../../core/leases';
import { silentLogger } from '../../../core/logger';
import type { Outgoing, Prepared } from '../../../pipeline/publisher';
import { LagBoard } from '../../../streams/lag';
import { planShards, shardKey, type Checkpoint, type StreamInfo } from '../../../streams/lineage';
import type { StreamLossReport } from '../../../streams/loss';
import { readShard, type ShardReaderDeps, type ShardTask } from '../../../streams/shard-reader';
import type { ShardApi } from '../../../streams/source';

/**
 * The streams role's reading order and checkpoints against an in-memory DynamoDB Streams: random split trees over one
 * or two streams of a table (an older stream turned off, a newer one), read by the real shard reader under random
 * crashes (a kill before a publish, or between a publish and its checkpoint), restarted each time from the stored
 * checkpoints. Every record is published, no child record before all of its parent's, no record of the newer stream
 * before all of the older one's.
 */

interface ModelShard {
  id: string;
  parent?: string;
  records: Array<{ eventID: string; seq: string }>;
  closed: boolean;
}

interface ModelStream {
  arn: string;
  label: string;
  shards: ModelShard[];
}

/** A shard's spec: its parent among the shards before it (or none), its record count, whether a leaf is closed. */
const shardSpec = fc.record({
  parent: fc.option(fc.nat(), { nil: undefined }),
  records: fc.nat({ max: 4 }),
  leafClosed: fc.boolean(),
});

const streamsSpec = fc.array(fc.array(shardSpec, { minLength: 1, maxLength: 7 }), {
  minLength: 1,
  maxLength: 2,
});

function buildModel(
  specs: Array<Array<{ parent?: number; records: number; leafClosed: boolean }>>,
): ModelStream[] {
  let seq = 100_000_000_000_000_000_000n;
  return specs.map((shards, s) => {
    const label = `2026-12-0${s + 1}T00:00:00.000`;
    const arn = `arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/${label}`;
    const built: ModelShard[] = shards.map((spec, i) => ({
      id: `shard-${s}-${i}`,
      ...(spec.parent !== undefined && i > 0 ? { parent: `shard-${s}-${spec.parent % i}` } : {}),
      records: [],
      closed: spec.leafClosed,
    }));
    // A parent is closed (split); an older stream is closed whole (turned off); records follow the tree's order.
    for (const sh of built) if (sh.parent !== undefined) built.find((p) => p.id === sh.parent)!.closed = true;
    if (s < specs.length - 1) for (const sh of built) sh.closed = true;
    shards.forEach((spec, i) => {
      for (let r = 0; r < spec.records; r++)
        built[i]!.records.push({ eventID: `${s}-${i}-${r}`, seq: String((seq += 1n)) });
    });
    return { arn, label, shards: built };
  });
}

function infoOf(model: ModelStream[]): StreamInfo[] {
  return model.map((m) => ({
    arn: m.arn,
    label: m.label,
    gone: false,
    shards: m.shards.map((s) => ({
      shardId: s.id,
      ...(s.parent ? { parentShardId: s.parent } : {}),
      closed: s.closed,
    })),
  }));
}

class Crash extends Error {}

function apiRecord(r: { eventID: string; seq: string }): StreamsApiRecord {
  return {
    eventID: r.eventID,
    eventName: 'REMOVE',
    awsRegion: 'us-east-1',
    dynamodb: {
      ApproximateCreationDateTime: new Date(1_800_000_000_000),
      Keys: { pk: { S: r.eventID } },
      OldImage: { pk: { S: r.eventID } },
      SequenceNumber: r.seq,
      SizeBytes: 10,
      StreamViewType: 'OLD_IMAGE',
    },
    userIdentity: { Type: 'Service', PrincipalId: 'dynamodb.amazonaws.com' },
  };
}

/** The in-memory DynamoDB Streams: iterators are positions; a page holds 1 to 3 records. */
function fakeApi(model: ModelStream[], pageSizes: number[], onCaughtUp: (shard: string) => void): ShardApi {
  const shardOf = (id: string): ModelShard => {
    for (const m of model) for (const s of m.shards) if (s.id === id) return s;
    throw new Error(`no shard ${id}`);
  };
  let pages = 0;
  return {
    async shardIterator(input) {
      const s = shardOf(input.ShardId ?? '');
      const at =
        input.ShardIteratorType === 'AFTER_SEQUENCE_NUMBER'
          ? s.records.findIndex((r) => r.seq === input.SequenceNumber) + 1
          : input.ShardIteratorType === 'LATEST'
            ? s.records.length
            : 0;
      return JSON.stringify({ shard: s.id, at });
    },
    async records(iterator) {
      const { shard, at } = JSON.parse(iterator) as { shard: string; at: number };
      const s = shardOf(shard);
      const size = pageSizes[pages++ % pageSizes.length] ?? 1;
      const page = s.records.slice(at, at + size);
      const next = at + page.length;
      if (page.length === 0 && !s.closed) onCaughtUp(s.id);
      return {
        Records: page.map(apiRecord),
        ...(s.closed && next >= s.records.length
          ? {}
          : { NextShardIterator: JSON.stringify({ shard, at: next }) }),
      };
    },
  };
}

interface Run {
  published: string[];
  checkpoints: Map<string, Checkpoint>;
}

/** Reads until every shard is read to its end (or caught up, when open), restarting after each crash. */
async function readAll(
  model: ModelStream[],
  crashes: Array<{ at: number; where: 'publish' | 'checkpoint' }>,
  pageSizes: number[],
  pick: number[],
): Promise<Run> {
  const run: Run = { published: [], checkpoints: new Map() };
  const caughtUp = new Set<string>();
  let step = 0;
  const crashAt = (where: 'publish' | 'checkpoint'): boolean => {
    step += 1;
    return crashes.some((c) => c.at === step && c.where === where);
  };
  let abort = (): void => undefined;
  const deps: ShardReaderDeps = {
    api: fakeApi(model, pageSizes, (shard) => {
      caughtUp.add(shard);
      abort();
    }),
    publisher: {
      prepare: (m: Outgoing): Prepared => ({
        table: m.table,
        kind: m.kind,
        topic: 't',
        message: { key: 'k', value: Buffer.from(m.kind === 'remove' ? m.record.eventID : ''), headers: {} },
      }),
      publish: async (messages) => {
        if (crashAt('publish')) throw new Crash('killed before the publish');
        for (const m of messages) run.published.push(m.message.value.toString());
      },
    },
    checkpoints: {
      save: async (_table, label, shardId, cp) => {
        if (crashAt('checkpoint')) throw new Crash('killed between the publish and the checkpoint');
        run.checkpoints.set(shardKey(label, shardId), cp);
      },
    },
    lag: new LagBoard(),
    losses: { report: async () => undefined, refresh: async () => undefined },
    logger: silentLogger,
    options: { pollMs: 0, maxRecords: 1000, removes: 'ttl', deadLetterTopic: 'dlq' },
    onEnded: () => undefined,
  };
  for (let round = 0; round < 500; round++) {
    const plan = planShards(infoOf(model), run.checkpoints);
    const todo = plan.readable.filter((r) => !caughtUp.has(r.shardId));
    if (todo.length === 0) return run;
    const ref = todo[(pick[round % pick.length] ?? 0) % todo.length]!;
    const shard = model.flatMap((m) => m.shards).find((s) => s.id === ref.shardId)!;
    const task: ShardTask = {
      ...ref,
      table: 'orders',
      unit: ref.shardId,
      closed: shard.closed,
      checkpoint: run.checkpoints.get(shardKey(ref.label, ref.shardId)),
    };
    const controller = new AbortController();
    abort = () => controller.abort();
    const lease: LeaseHandle = {
      kind: 'streams',
      name: ref.shardId,
      signal: controller.signal,
      assertValid() {},
    };
    try {
      await readShard(task, lease, deps);
    } catch (err) {
      if (!(err instanceof Crash)) throw err;
    }
  }
  throw new Error('the reading did not finish in 500 rounds');
}

describe('shard lineage and checkpoints (property)', () => {
  it('for any split tree and crash points: every record published, children after parents, older streams first', async () => {
    await fc.assert(
      fc.asyncProperty(
        streamsSpec,
        fc.array(
          fc.record({ at: fc.integer({ min: 1, max: 60 }), where: fc.constantFrom('publish', 'checkpoint') }),
          {
            maxLength: 6,
          },
        ),
        fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 5 }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 5 }),
        async (specs, crashes, pageSizes, pick) => {
          const model = buildModel(specs);
          const run = await readAll(model, crashes, pageSizes, pick);
          const first = new Map<string, number>();
          run.published.forEach((id, i) => (first.has(id) ? undefined : first.set(id, i)));
          const all = model.flatMap((m) => m.shards.flatMap((s) => s.records.map((r) => r.eventID)));
          // Nothing is missing after the restarts.
          expect(all.filter((id) => !first.has(id))).toEqual([]);
          const firstOf = (s: ModelShard): number[] => s.records.map((r) => first.get(r.eventID)!);
          for (const m of model)
            for (const child of m.shards) {
              if (child.parent === undefined) continue;
              const parent = m.shards.find((s) => s.id === child.parent)!;
              const parentLast = Math.max(-1, ...firstOf(parent));
              // No record of a child before every record of its parent.
              expect(Math.min(Infinity, ...firstOf(child))).toBeGreaterThan(parentLast);
            }
          if (model.length === 2) {
            const olderLast = Math.max(-1, ...model[0]!.shards.flatMap(firstOf));
            expect(Math.min(Infinity, ...model[1]!.shards.flatMap(firstOf))).toBeGreaterThan(olderLast);
          }
          // Every closed shard ends with its checkpoint saying so.
          for (const m of model)
            for (const s of m.shards)
              if (s.closed) expect(run.checkpoints.get(shardKey(m.label, s.id))?.ended).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('planShards', () => {
  const stream = (label: string, shards: StreamInfo['shards'], gone = false): StreamInfo => ({
    arn: `arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/${label}`,
    label,
    shards,
    gone,
  });

  it('a child waits for its parent; a parent no longer listed counts as done', () => {
    const s = stream('L1', [
      { shardId: 'a', closed: true },
      { shardId: 'b', parentShardId: 'a', closed: false },
      { shardId: 'c', parentShardId: 'trimmed', closed: false },
    ]);
    expect(planShards([s], new Map()).readable.map((r) => r.shardId)).toEqual(['a', 'c']);
    const done = new Map([[shardKey('L1', 'a'), { ended: true }]]);
    expect(planShards([s], done).readable.map((r) => r.shardId)).toEqual(['b', 'c']);
  });

  it('a shard read part of the way and no longer listed is lost after its checkpoint, reported once it is seen', () => {
    const s = stream('L1', [{ shardId: 'b', closed: false }]);
    const cps = new Map<string, Checkpoint>([
      [shardKey('L1', 'a'), { sequenceNumber: '100000000000000000042', ended: false }],
      [shardKey('L1', 'old'), { ended: true }],
    ]);
    expect(planShards([s], cps).lost).toEqual([
      { arn: s.arn, label: 'L1', shardId: 'a', after: '100000000000000000042' },
    ]);
    // A gone stream: every unfinished checkpoint of it.
    const gone = stream('L0', [], true);
    expect(planShards([gone], new Map([[shardKey('L0', 'x'), { ended: false }]])).lost).toEqual([
      { arn: gone.arn, label: 'L0', shardId: 'x' },
    ]);
  });
});

describe('readShard', () => {
  it('a checkpoint that fell out of the stream is reported as loss, then the shard is read from its trim horizon', async () => {
    const losses: StreamLossReport[] = [];
    const published: string[] = [];
    const records = [
      { eventID: 'e1', seq: '100000000000000000001' },
      { eventID: 'e2', seq: '100000000000000000002' },
    ];
    const api: ShardApi = {
      async shardIterator(input) {
        if (input.ShardIteratorType === 'AFTER_SEQUENCE_NUMBER')
          throw new TrimmedDataAccessException({ message: 'trimmed', $metadata: {} });
        return 'start';
      },
      async records() {
        return { Records: records.map(apiRecord) };
      },
    };
    const saved: Checkpoint[] = [];
    await readShard(
      {
        arn: 'arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/L1',
        label: 'L1',
        shardId: 's1',
        table: 'orders',
        unit: 'u',
        closed: true,
        checkpoint: { sequenceNumber: '100000000000000000000', ended: false },
      },
      { kind: 'streams', name: 'u', signal: new AbortController().signal, assertValid() {} },
      {
        api,
        publisher: {
          prepare: (m) => ({
            table: m.table,
            kind: m.kind,
            topic: 't',
            message: {
              key: 'k',
              value: Buffer.from(m.kind === 'remove' ? m.record.eventID : ''),
              headers: {},
            },
          }),
          publish: async (ms) => void published.push(...ms.map((m) => m.message.value.toString())),
        },
        checkpoints: { save: async (_t, _l, _s, cp) => void saved.push(cp) },
        lag: new LagBoard(),
        losses: { report: async (l) => void losses.push(l), refresh: async () => undefined },
        logger: silentLogger,
        options: { pollMs: 0, maxRecords: 1000, removes: 'ttl', deadLetterTopic: 'dlq' },
        onEnded: () => undefined,
      },
    );
    expect(losses).toEqual([
      expect.objectContaining({
        table: 'orders',
        shardId: 's1',
        after: '100000000000000000000',
        reason: 'trimmed',
      }),
    ]);
    expect(published).toEqual(['e1', 'e2']);
    expect(saved.at(-1)).toEqual({ sequenceNumber: '100000000000000000002', ended: true });
  });
});
