import { relative } from 'node:path';
import {
  sourceOf,
  type ConfigSource,
  type StackEndpointsChoice,
  type TtlstreamConfig,
} from '../../core/config';
import { describeKafkaSasl } from '../../core/kafka-sasl';
import { describeKafkaTls } from '../../core/kafka-tls';
import { redactUrlCredentials } from './redact';

/** Where a connection setting's value came from, in words an operator can act on. */
function origin(
  source: ConfigSource,
  setting: { env: string; flag?: string },
  choice: StackEndpointsChoice,
  cwd: string,
): string {
  switch (source) {
    case 'flag':
      return setting.flag ?? 'flag';
    case 'env':
      return setting.env;
    case 'config file':
      return 'config file';
    case 'endpoints file':
      return choice.used
        ? `local stack ${shortPath(choice.used.path, cwd)}, ${choice.used.by}`
        : 'local stack';
    default:
      return 'default';
  }
}

function shortPath(path: string, cwd: string): string {
  const rel = relative(cwd, path);
  return rel !== '' && !rel.startsWith('..') ? rel : path;
}

/**
 * The one stderr line a command that touches services prints: each service's endpoint (credentials in URLs
 * redacted) or "AWS default for region X", and where that came from. Pure.
 */
export function endpointsLine(
  config: TtlstreamConfig,
  sources: ReadonlyMap<string, ConfigSource>,
  choice: StackEndpointsChoice,
  cwd: string,
  env: NodeJS.ProcessEnv = {},
): string {
  const from = (path: string, setting: { env: string; flag?: string }): string =>
    origin(sourceOf(sources, path), setting, choice, cwd);
  const awsDefault = `AWS default for region ${config.region} (region: ${from('region', { env: 'TTLSTREAM_REGION', flag: '--region' })})`;
  const parts = [
    `DynamoDB ${
      config.dynamodb.endpoint !== undefined
        ? `${redactUrlCredentials(config.dynamodb.endpoint)} (${from('dynamodb.endpoint', { env: 'TTLSTREAM_DYNAMODB_ENDPOINT', flag: '--endpoint-url' })})`
        : awsDefault
    }`,
    [
      `Kafka ${config.kafka.brokers.join(',')} (${from('kafka.brokers', { env: 'TTLSTREAM_KAFKA_BROKERS', flag: '--brokers' })})`,
      describeKafkaTls(config.kafka.ssl, env),
      describeKafkaSasl(config.kafka.sasl, config.region),
    ]
      .filter((p) => p !== undefined)
      .join(', '),
  ];
  if (config.archive.url.startsWith('s3://')) {
    parts.push(
      `S3 ${
        config.archive.s3Endpoint !== undefined
          ? `${redactUrlCredentials(config.archive.s3Endpoint)} (${from('archive.s3Endpoint', { env: 'TTLSTREAM_ARCHIVE_S3_ENDPOINT' })})`
          : awsDefault
      }`,
    );
  }
  const registry = config.schemas.registry;
  if (registry)
    parts.push(
      `schema registry ${redactUrlCredentials(registry.url)} (${from('schemas.registry.url', { env: 'TTLSTREAM_SCHEMAS_REGISTRY_URL', flag: '--registry' })})`,
    );
  return `endpoints: ${parts.join('; ')}`;
}

/** Said once when a local stack's endpoints file lies here but no local stack is configured. Pure. */
export function ignoredEndpointsNote(choice: StackEndpointsChoice, cwd: string): string | undefined {
  if (!choice.ignored) return undefined;
  const shown = shortPath(choice.ignored, cwd);
  const dir = shortPath(choice.ignored.replace(/[\\/]endpoints\.json$/, ''), cwd);
  return `note: found ${shown} from a local stack; not used because no local stack is configured; set TTLSTREAM_LOCAL_STACK=${dir} (or --local-stack ${dir}) to use it`;
}
