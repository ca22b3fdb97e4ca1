import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import type { MiddlewareStack } from '@smithy/types';
import { Kafka, logLevel, type KafkaConfig, type RetryOptions, type SASLOptions } from 'kafkajs';
import type { TtlstreamConfig } from './config';
import { silentLogger, type Logger } from './logger';
import { metrics } from './metrics';

/** The one place where service clients are built from configuration. */
export function createDynamoClient(config: TtlstreamConfig): DynamoDBClient {
  const { endpoint, accessKeyId, secretAccessKey, maxAttempts, connectionTimeoutMs, requestTimeoutMs } =
    config.dynamodb;
  const client = new DynamoDBClient({
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
  });
  countRequests(client);
  countSdkRetries(client, 'dynamodb');
  return client;
}

/** Count every request (what the server is asked to do is the first thing to know when it is the bottleneck). */
function countRequests(client: DynamoDBClient): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { TableName?: unknown; RequestItems?: Record<string, unknown> };
      const table =
        typeof input.TableName === 'string'
          ? input.TableName
          : Object.keys(input.RequestItems ?? {}).join(',') || '-';
      metrics.dynamodbRequests.inc({ operation: context.commandName ?? 'unknown', table });
      return next(args);
    },
    { step: 'initialize', name: 'ttlstreamCountRequests' },
  );
}

/**
 * Count the attempts the SDK retried on its own (a throttle, a 5xx, a timed-out connection): they are invisible
 * otherwise, because the SDK resolves or throws only after its last attempt. The retry middleware writes the
 * attempts into the output's or the error's `$metadata`, which this outermost step reads.
 */
export function countSdkRetries<I extends object, O extends object>(
  client: { middlewareStack: MiddlewareStack<I, O> },
  service: 'dynamodb' | 's3',
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
        throw err;
      }
    },
    { step: 'initialize', name: 'ttlstreamCountSdkRetries' },
  );
}

export function createS3Client(config: TtlstreamConfig): S3Client {
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
  countSdkRetries(client, 's3');
  return client;
}

const KAFKA_LEVEL: Record<number, 'error' | 'warn' | 'info' | 'debug'> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

export function createKafka(
  config: TtlstreamConfig,
  logger: Logger = silentLogger,
  clientIdSuffix?: string,
  /** A one-shot command retries less: with Kafka down an operator wants one line in seconds, not 40 s of retries. */
  retry: RetryOptions = { retries: 8, initialRetryTime: 200, maxRetryTime: 10_000 },
): Kafka {
  const k = config.kafka;
  const kafkaLogger = logger.child({ component: 'kafkajs' });
  const options: KafkaConfig = {
    clientId: clientIdSuffix ? `${k.clientId}-${clientIdSuffix}` : k.clientId,
    brokers: k.brokers,
    ssl: k.ssl,
    connectionTimeout: k.connectionTimeoutMs,
    requestTimeout: k.requestTimeoutMs,
    retry,
    logLevel: logLevel.WARN,
    logCreator:
      () =>
      ({ level, log }) => {
        const { message, ...extra } = log;
        kafkaLogger[KAFKA_LEVEL[level] ?? 'info'](extra, String(message));
      },
  };
  if (k.sasl)
    options.sasl = {
      mechanism: k.sasl.mechanism,
      username: k.sasl.username,
      password: k.sasl.password,
    } as SASLOptions;
  return new Kafka(options);
}
