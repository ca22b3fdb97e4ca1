import type { MiddlewareStack } from '@smithy/types';
import type { TtlstreamConfig } from '../../core/config';
import { ServiceError } from '../../core/errors';
import { explainKafkaSetup, type KafkaSetupError } from './kafka-errors';

/** Which service a request went to, stamped on its error by the client's middleware. */
export type Service = 'dynamodb' | 'dynamodb-streams' | 's3';

const SERVICE = Symbol('ttlstream.service');

/** Marks every error of this client's requests with its service, so the CLI can name the setting. */
export function tagServiceErrors<I extends object, O extends object>(
  client: { middlewareStack: MiddlewareStack<I, O> },
  service: Service,
): void {
  client.middlewareStack.add(
    (next) => async (args) => {
      try {
        return await next(args);
      } catch (err) {
        if (err !== null && typeof err === 'object') Object.defineProperty(err, SERVICE, { value: service });
        throw err;
      }
    },
    { step: 'initialize', name: 'ttlstreamServiceTag' },
  );
}

export { ServiceError };

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'ECONNRESET',
  'EHOSTUNREACH',
]);

interface ErrorLike {
  name?: string;
  message?: string;
  code?: string;
  cause?: unknown;
  originalError?: unknown;
  broker?: string;
  $response?: { statusCode?: number; headers?: Record<string, string | undefined> };
  [SERVICE]?: Service;
}

function chain(err: unknown): ErrorLike[] {
  const out: ErrorLike[] = [];
  let e: unknown = err;
  while (e !== null && typeof e === 'object' && out.length < 8) {
    out.push(e as ErrorLike);
    e = (e as ErrorLike).originalError ?? (e as ErrorLike).cause;
  }
  return out;
}

/**
 * Rewrites a connection failure as one line naming the service, the address, and the setting (with
 * its environment variable) that chose it; undefined when the error is not one of those. A Kafka failure that
 * only a setting can mend (login, certificate, TLS on one side only) is a KafkaSetupError (exit 2).
 */
export function explainServiceError(
  err: unknown,
  config: TtlstreamConfig,
): ServiceError | KafkaSetupError | undefined {
  const errors = chain(err);
  const last = errors[errors.length - 1];
  const reason = last?.message ?? String(err);
  if (errors.some((e) => e.name?.startsWith('KafkaJS') || e.name === 'TokenError')) {
    const setup = explainKafkaSetup(errors, config);
    if (setup) return setup;
    const connection = errors.some(
      (e) =>
        /KafkaJS(Connection|ConnectionClosed|RequestTimeout|BrokerNotFound)Error/.test(e.name ?? '') ||
        NETWORK_CODES.has(e.code ?? ''),
    );
    if (!connection) return undefined;
    return new ServiceError(
      `Kafka brokers ${config.kafka.brokers.join(',')} (kafka.brokers / TTLSTREAM_KAFKA_BROKERS) not reachable: ${reason}`,
      { cause: err },
    );
  }
  const service = errors.find((e) => e[SERVICE])?.[SERVICE];
  if (!service) return undefined;
  const where = whereOf(service, config);
  const response = errors.find((e) => e.$response)?.$response;
  const type = response?.headers?.['content-type'] ?? response?.headers?.['Content-Type'] ?? '';
  if (/html/i.test(type) || errors.some((e) => /Deserialization error/.test(e.message ?? ''))) {
    const what = /html/i.test(type) ? 'HTML' : `something else (${type || 'no content type'})`;
    const label = { dynamodb: 'DynamoDB', 'dynamodb-streams': 'DynamoDB Streams', s3: 'S3' }[service];
    return new ServiceError(
      `${where} answered with ${what}, not ${label} (HTTP ${response?.statusCode ?? '?'}): is that the right address?`,
      { cause: err },
    );
  }
  // Under some runtimes (a jest vm) the SDK wraps the socket error and only its message keeps the code.
  const network = errors.find(
    (e) => NETWORK_CODES.has(e.code ?? '') || [...NETWORK_CODES].some((c) => e.message?.includes(c)),
  );
  if (!network) return undefined;
  const why = (network.message ?? network.code ?? '').replace(/^AWS SDK error wrapper for /, '');
  return new ServiceError(`${where} not reachable: ${why}`, { cause: err });
}

/** The service's address and the setting that chose it, as an error line names them. */
function whereOf(service: Service, config: TtlstreamConfig): string {
  const aws = `(AWS default for ${config.region})`;
  switch (service) {
    case 'dynamodb':
      return `DynamoDB endpoint ${config.dynamodb.endpoint ?? aws} (dynamodb.endpoint / TTLSTREAM_DYNAMODB_ENDPOINT)`;
    case 'dynamodb-streams':
      return config.streams.endpoint !== undefined
        ? `DynamoDB Streams endpoint ${config.streams.endpoint} (streams.endpoint / TTLSTREAM_STREAMS_ENDPOINT)`
        : `DynamoDB Streams endpoint ${config.dynamodb.endpoint ?? aws} (dynamodb.endpoint / TTLSTREAM_DYNAMODB_ENDPOINT, unless streams.endpoint / TTLSTREAM_STREAMS_ENDPOINT is set)`;
    case 's3':
      return `S3 endpoint ${config.archive.s3Endpoint ?? aws} (archive.s3Endpoint / TTLSTREAM_ARCHIVE_S3_ENDPOINT)`;
  }
}
