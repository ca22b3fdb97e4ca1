import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { S3Client } from '@aws-sdk/client-s3';
import type { MiddlewareStack } from '@smithy/types';
import { Kafka, logLevel, type KafkaConfig, type RetryOptions } from 'kafkajs';
import type { TtlstreamConfig } from './config';
import { muteKafkajsNegativeTimeoutWarning } from './kafkajs-warnings';
import { kafkaSecurity } from './kafka-security';
import { silentLogger, type Logger } from './logger';
import { errorLabel, labelTable, metrics, tableLabel } from './metrics';

/** The one place where service clients are built from configuration. */
export function createDynamoClient(
  config: Pick<TtlstreamConfig, 'region' | 'dynamodb' | 'tables'>,
): DynamoDBClient {
  const client = new DynamoDBClient(dynamodbApiOptions(config, config.dynamodb.endpoint));
  for (const table of Object.values(config.tables)) labelTable(table);
  countRequests(client);
  countSdkRetries(client, 'dynamodb');
  return client;
}

/**
 * What a client of DynamoDB's APIs (its tables', its Streams') is given: the region, `dynamodb`'s attempts, timeouts
 * and credentials, and `endpoint`.
 */
function dynamodbApiOptions(
  config: Pick<TtlstreamConfig, 'region' | 'dynamodb'>,
  endpoint: string | undefined,
) {
  const { accessKeyId, secretAccessKey, maxAttempts, connectionTimeoutMs, requestTimeoutMs } =
    config.dynamodb;
  return {
    region: config.region,
    maxAttempts,
    // Without these an attempt on a connection whose peer vanished silently (no reset, no close) waits for the
    // SDK's default socket timeout of 5 minutes, holding a producer batch or a scan page, and the lease it works
    // under, that long (test/integration/faults/network.test.ts, "silent dynamodb links"). requestTimeout runs until
    // the response headers; socketTimeout covers a body that stops arriving. A timed-out attempt is a transient error:
    // the SDK retries it on a fresh connection, up to maxAttempts.
    requestHandler: {
      connectionTimeout: connectionTimeoutMs,
      requestTimeout: requestTimeoutMs,
      throwOnRequestTimeout: true,
      socketTimeout: requestTimeoutMs,
    },
    ...(endpoint ? { endpoint } : {}),
    ...(accessKeyId && secretAccessKey
      ? { credentials: { accessKeyId, secretAccessKey } }
      : endpoint
        ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
        : {}),
  };
}

/**
 * The DynamoDB Streams client of the streams role: `streams.endpoint`, else `dynamodb.endpoint` when that is set (a
 * DynamoDB-API server that serves streams answers both APIs on one address), else AWS's Streams endpoint of the
 * region. The credentials and timeouts are DynamoDB's.
 */
export function createStreamsClient(
  config: Pick<TtlstreamConfig, 'region' | 'dynamodb' | 'streams'>,
): DynamoDBStreamsClient {
  const client = new DynamoDBStreamsClient(
    dynamodbApiOptions(config, config.streams.endpoint ?? config.dynamodb.endpoint),
  );
  client.middlewareStack.add(
    (next, context) => async (args) => {
      metrics.dynamodbStreamsRequests.inc({ operation: context.commandName ?? 'unknown' });
      return next(args);
    },
    { step: 'initialize', name: 'ttlstreamCountStreamsRequests' },
  );
  countSdkRetries(client, 'dynamodb-streams');
  return client;
}

/** Count every request (what the server is asked to do is the first thing to know when it is the bottleneck). */
function countRequests(client: DynamoDBClient): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { TableName?: unknown; RequestItems?: Record<string, unknown> };
      const names =
        typeof input.TableName === 'string' ? [input.TableName] : Object.keys(input.RequestItems ?? {});
      const table = names.length === 0 ? '-' : [...new Set(names.map(tableLabel))].sort().join(',');
      metrics.dynamodbRequests.inc({ operation: context.commandName ?? 'unknown', table });
      return next(args);
    },
    { step: 'initialize', name: 'ttlstreamCountRequests' },
  );
}

/** What an AWS SDK request that failed was: its service and the command's name (ScanCommand, PutObjectCommand). */
export interface SdkRequest {
  service: 'dynamodb' | 'dynamodb-streams' | 's3';
  operation: string;
}

const SDK_REQUEST = Symbol('ttlstream.sdkRequest');

/** The request `err` is the failure of, when a client of this module sent it (countSdkRetries marks it). */
export function sdkRequestOf(err: unknown): SdkRequest | undefined {
  if (err === null || typeof err !== 'object') return undefined;
  return (err as { [SDK_REQUEST]?: SdkRequest })[SDK_REQUEST];
}

/**
 * Count the attempts the SDK retried on its own (a throttle, a 5xx, a timed-out connection): they are invisible
 * otherwise, because the SDK resolves or throws only after its last attempt. The retry middleware writes the
 * attempts into the output's or the error's `$metadata`, which this outermost step reads. A request that fails
 * after its last attempt is counted by error name (ttlstream_sdk_errors_total), and marked with its service and
 * operation (sdkRequestOf), so whoever handles it can say what failed.
 */
export function countSdkRetries<I extends object, O extends object>(
  client: { middlewareStack: MiddlewareStack<I, O> },
  service: 'dynamodb' | 'dynamodb-streams' | 's3',
): void {
  const count = (operation: string, result: unknown): void => {
    const attempts = (result as { $metadata?: { attempts?: unknown } } | undefined)?.$metadata?.attempts;
    if (typeof attempts === 'number' && attempts > 1)
      metrics.sdkRetries.inc({ service, operation }, attempts - 1);
  };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const operation = context.commandName ?? 'unknown';
      try {
        const out = await next(args);
        count(operation, out.output);
        return out;
      } catch (err) {
        count(operation, err);
        metrics.sdkErrors.inc({ service, operation, error: errorLabel(err) });
        // Said once, by the request that failed first: an error handed on and sent again keeps its first origin.
        if (
          err !== null &&
          typeof err === 'object' &&
          !Object.isFrozen(err) &&
          sdkRequestOf(err) === undefined
        )
          Object.defineProperty(err, SDK_REQUEST, { value: { service, operation } satisfies SdkRequest });
        throw err;
      }
    },
    { step: 'initialize', name: 'ttlstreamCountSdkRetries' },
  );
}

export function createS3Client(config: Pick<TtlstreamConfig, 'region' | 'archive'>): S3Client {
  const { s3Endpoint, s3ForcePathStyle, s3AccessKeyId, s3SecretAccessKey, s3IdleTimeoutMs } = config.archive;
  const client = new S3Client({
    region: config.region,
    forcePathStyle: s3ForcePathStyle,
    // Without a timeout an attempt on a connection whose peer vanished silently (no reset, no close) never settles:
    // the roll's retry loop never runs and the partition stalls while the 24-hour window runs out
    // (test/integration/faults/network-archiver.test.ts, "silent S3 link"). In @smithy/node-http-handler 4.x
    // `socketTimeout` is an idle limit (socket.setTimeout: no byte either way for that long), while `requestTimeout`
    // counts from the start of the request to the response headers, i.e. the whole upload of a body: a total that
    // would cut a 16 MiB part on a slow but working link, so it stays unset. The timeout is a TimeoutError, which
    // the SDK retries on a new connection (maxAttempts), then the roll retries.
    requestHandler: { connectionTimeout: s3IdleTimeoutMs, socketTimeout: s3IdleTimeoutMs },
    // S3-compatible servers differ in their support of the newer default checksums.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    ...(s3Endpoint ? { endpoint: s3Endpoint } : {}),
    ...(s3AccessKeyId && s3SecretAccessKey
      ? { credentials: { accessKeyId: s3AccessKeyId, secretAccessKey: s3SecretAccessKey } }
      : s3Endpoint
        ? { credentials: { accessKeyId: 'local', secretAccessKey: 'localsecret' } }
        : {}),
  });
  client.middlewareStack.add(
    (next, context) => async (args) => {
      metrics.s3Requests.inc({ operation: context.commandName ?? 'unknown' });
      return next(args);
    },
    { step: 'initialize', name: 'ttlstreamCountRequests' },
  );
  countSdkRetries(client, 's3');
  return client;
}

type Level = 'error' | 'warn' | 'info' | 'debug';

const KAFKA_LEVEL: Record<number, Level> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

/**
 * Conditions kafkajs 2.2.4 logs at ERROR although it retries them itself (or the group rejoins, or the
 * consumer restarts): every restart of a group member, every broker restart or leader move shows them.
 * Error level is for what needs a human, so these are logged at warn (operators alerting on error logs were
 * paged after every deploy). Matched on kafkajs's own message texts (its protocol error
 * table, src/protocol/error.js, and its connection and consumer log lines), which a kafkajs upgrade must
 * re-check (test/unit/core/kafka-log.test.ts pins them).
 */
const TRANSIENT_KAFKA_CONDITIONS = [
  // group membership churn: a member joined, left or died; the group rebalances and everyone rejoins
  'The group is rebalancing',
  'The coordinator is not aware of this member',
  'Specified group generation id is not valid',
  'The group member needs to have a valid member id',
  // coordinator and leader moves, retried with backoff
  'The coordinator is loading',
  'The group coordinator is not available',
  'This is not the correct coordinator for this group',
  'There is no leader for this topic-partition',
  'This server is not the leader for that topic-partition',
  'The leader high watermark has not caught up',
  'The leader epoch in the request is',
  'The replica is not available',
  'fewer in-sync replicas than required',
  'This server does not host this topic-partition',
  'The fetch session',
  // transport: the client reconnects
  'The request timed out',
  'The server disconnected before a response was received',
  'Connection error:',
  'Connection timeout',
  'Closed connection',
  // a consumer crash kafkajs restarts on its own
  'Restarting the consumer in',
  // Two processes racing to create a stream topic: the loser's CreateTopics response carries
  // TOPIC_ALREADY_EXISTS, logged before admin.createTopics turns it into `false`. Any other
  // CreateTopics failure is thrown to the caller (core/topics.ts), which reports it at error.
  'Response CreateTopics(',
];

/** The level a kafkajs log line is written at: its own, except transient ERRORs at warn. */
export function kafkaLogLevel(level: number, message: string, extra: Record<string, unknown>): Level {
  const mapped = KAFKA_LEVEL[level] ?? 'info';
  if (mapped !== 'error') return mapped;
  const text = `${message} ${typeof extra.error === 'string' ? extra.error : ''}`;
  return TRANSIENT_KAFKA_CONDITIONS.some((c) => text.includes(c)) ? 'warn' : 'error';
}

export function createKafka(
  config: TtlstreamConfig,
  logger: Logger = silentLogger,
  clientIdSuffix?: string,
  /** A one-shot command retries less: with Kafka down an operator wants one line in seconds, not 40 s of retries. */
  retry: RetryOptions = { retries: 8, initialRetryTime: 200, maxRetryTime: 10_000 },
  /** Only these of kafka.brokers (a check of each broker on its own). */
  brokers: string[] = config.kafka.brokers,
): Kafka {
  muteKafkajsNegativeTimeoutWarning();
  const k = config.kafka;
  const security = kafkaSecurity(config);
  if (!security.warned) {
    security.warned = true;
    for (const w of security.warnings) logger.warn(w);
  }
  const kafkaLogger = logger.child({ component: 'kafkajs' });
  const options: KafkaConfig = {
    clientId: clientIdSuffix ? `${k.clientId}-${clientIdSuffix}` : k.clientId,
    brokers,
    ssl: security.ssl === false ? false : security.ssl,
    connectionTimeout: k.connectionTimeoutMs,
    requestTimeout: k.requestTimeoutMs,
    retry,
    logLevel: logLevel.WARN,
    logCreator:
      () =>
      ({ level, log }) => {
        const { message, ...extra } = log;
        const at = kafkaLogLevel(level, String(message), extra);
        if (level === logLevel.ERROR)
          metrics.kafkaClientErrors.inc({ kind: at === 'error' ? 'error' : 'transient' });
        kafkaLogger[at](extra, String(message));
      },
  };
  if (security.sasl) options.sasl = security.sasl;
  return new Kafka(options);
}
