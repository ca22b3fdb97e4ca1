import {
  DescribeTableCommand,
  ResourceNotFoundException,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  GetRecordsCommand,
  GetShardIteratorCommand,
  ListStreamsCommand,
  ResourceNotFoundException as StreamNotFound,
  type DynamoDBStreamsClient,
  type GetShardIteratorCommandInput,
  type Shard,
  type _Record as StreamsApiRecord,
} from '@aws-sdk/client-dynamodb-streams';
import type { ShardInfo, StreamInfo } from './lineage';

/**
 * A followed table as DynamoDB shows it: whether its stream gives the deletions, and every stream of it that still
 * exists. Costs one DescribeTable, one ListStreams and one DescribeStream per stream (a page per 100 shards).
 */

/** Why a table's current stream cannot give its deletions; undefined when it can. */
export type StreamProblem = 'stream-off' | 'no-old-image';

export interface TableStreams {
  table: string;
  /** False once the table is dropped: its streams are read to their end. */
  exists: boolean;
  problem?: StreamProblem;
  streams: StreamInfo[];
}

/** The view types whose REMOVE records carry the deleted item. */
const OLD_IMAGE_VIEWS = new Set(['OLD_IMAGE', 'NEW_AND_OLD_IMAGES']);

/** The label of a stream ARN: what follows `/stream/`. */
export function labelOf(arn: string): string {
  return arn.slice(arn.lastIndexOf('/stream/') + '/stream/'.length);
}

/**
 * The problem of a table's current stream, from its description (DescribeTable): off, or keeping no old images. The
 * fix is said where it is reported (streams/index.ts).
 */
export function problemOf(
  spec: { StreamEnabled?: boolean; StreamViewType?: string } | undefined,
): StreamProblem | undefined {
  if (spec?.StreamEnabled !== true) return 'stream-off';
  return OLD_IMAGE_VIEWS.has(spec.StreamViewType ?? '') ? undefined : 'no-old-image';
}

/** What an operator does about each problem: said in the error that refuses the start. */
const FIX: Record<StreamProblem, (table: string) => string> = {
  'stream-off': (t) =>
    `its stream is off: turn it on with old images (aws dynamodb update-table --table-name ${t} --stream-specification StreamEnabled=true,StreamViewType=OLD_IMAGE)`,
  'no-old-image': (t) =>
    `its stream keeps no old images, so a deletion record lacks the deleted item: turn the stream off and on again with OLD_IMAGE or NEW_AND_OLD_IMAGES (aws dynamodb update-table --table-name ${t} --stream-specification ...)`,
};

export function fixOf(problem: StreamProblem, table: string): string {
  return FIX[problem](table);
}

export async function tableStreams(
  ddb: DynamoDBClient,
  streams: DynamoDBStreamsClient,
  table: string,
  knownArns: readonly string[],
): Promise<TableStreams> {
  const arns = new Set(knownArns);
  let exists = true;
  let problem: StreamProblem | undefined;
  try {
    const t = (await ddb.send(new DescribeTableCommand({ TableName: table }))).Table;
    problem = problemOf(t?.StreamSpecification);
    // Named even when the stream was turned off: what it holds is still read to its end.
    if (t?.LatestStreamArn) arns.add(t.LatestStreamArn);
  } catch (err) {
    if (!(err instanceof ResourceNotFoundException)) throw err;
    exists = false;
  }
  if (exists) for (const arn of await listedStreams(streams, table)) arns.add(arn);
  const out: StreamInfo[] = [];
  for (const arn of arns) out.push(await describeStream(streams, arn));
  return { table, exists, ...(problem ? { problem } : {}), streams: out };
}

/** The streams ListStreams names for the table, page after page. */
async function listedStreams(streams: DynamoDBStreamsClient, table: string): Promise<string[]> {
  const out: string[] = [];
  let start: string | undefined;
  do {
    const page = await streams.send(
      new ListStreamsCommand({ TableName: table, ...(start ? { ExclusiveStartStreamArn: start } : {}) }),
    );
    for (const s of page.Streams ?? []) if (s.StreamArn) out.push(s.StreamArn);
    start = page.LastEvaluatedStreamArn;
  } while (start);
  return out;
}

/** Every shard of a stream, page after page; a stream DynamoDB no longer knows is gone. */
async function describeStream(streams: DynamoDBStreamsClient, arn: string): Promise<StreamInfo> {
  const shards: ShardInfo[] = [];
  let label = labelOf(arn);
  let start: string | undefined;
  try {
    do {
      const page = await streams.send(
        new DescribeStreamCommand({ StreamArn: arn, ...(start ? { ExclusiveStartShardId: start } : {}) }),
      );
      const d = page.StreamDescription;
      label = d?.StreamLabel ?? label;
      for (const s of d?.Shards ?? []) if (s.ShardId) shards.push(shardInfo(s));
      start = d?.LastEvaluatedShardId;
    } while (start);
  } catch (err) {
    if (err instanceof StreamNotFound) return { arn, label, shards: [], gone: true };
    throw err;
  }
  return { arn, label, shards, gone: false };
}

function shardInfo(s: Shard): ShardInfo {
  return {
    shardId: s.ShardId ?? '',
    ...(s.ParentShardId ? { parentShardId: s.ParentShardId } : {}),
    closed: s.SequenceNumberRange?.EndingSequenceNumber !== undefined,
  };
}

/** What a shard reader asks of DynamoDB Streams: an iterator, and the records after it. */
export interface ShardApi {
  shardIterator(input: GetShardIteratorCommandInput): Promise<string>;
  records(
    iterator: string,
    limit: number,
  ): Promise<{ Records?: StreamsApiRecord[]; NextShardIterator?: string }>;
}

/** The shard API of a DynamoDB Streams client; its errors (TrimmedDataAccessException, ...) pass through. */
export function shardApiOf(streams: DynamoDBStreamsClient): ShardApi {
  return {
    async shardIterator(input) {
      const out = await streams.send(new GetShardIteratorCommand(input));
      if (!out.ShardIterator) throw new Error(`GetShardIterator gave no iterator for shard ${input.ShardId}`);
      return out.ShardIterator;
    },
    records: (iterator, limit) =>
      streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: limit })),
  };
}
