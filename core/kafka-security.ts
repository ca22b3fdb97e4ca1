import type { ConnectionOptions } from 'node:tls';
import type { Mechanism, SASLOptions } from 'kafkajs';
import type { TtlstreamConfig } from './config';
import { kafkaSaslOptions } from './kafka-sasl';
import { kafkaTlsOptions } from './kafka-tls';

/** The Kafka client's TLS and SASL options, resolved from the configuration once per process. */
export interface KafkaSecurity {
  ssl: ConnectionOptions | false;
  sasl: SASLOptions | Mechanism | undefined;
  /** Said at every start (e.g. certificates not verified); `warned` once someone said them. */
  warnings: string[];
  warned: boolean;
}

const resolved = new WeakMap<TtlstreamConfig['kafka'], KafkaSecurity>();

/**
 * Reads and checks the TLS files and builds the SASL options (throws ConfigError naming the setting). Memoized per
 * configuration, so every role's client shares one token (one token command run, one MSK signature per refresh)
 * and the files are read once.
 */
export function kafkaSecurity(config: TtlstreamConfig): KafkaSecurity {
  const known = resolved.get(config.kafka);
  if (known) return known;
  const { ssl, sasl } = config.kafka;
  const warnings: string[] = [];
  if (typeof ssl === 'object' && !ssl.rejectUnauthorized)
    warnings.push(
      "kafka.ssl.rejectUnauthorized is false: the brokers' certificates are NOT verified, so anyone on the path can read and change the stream; set kafka.ssl.caFile (TTLSTREAM_KAFKA_SSL_CA_FILE) instead",
    );
  if (sasl && ssl === false)
    warnings.push(
      `kafka.allowPlaintextSasl is true: SASL ${sasl.mechanism} credentials cross the network in clear`,
    );
  const security: KafkaSecurity = {
    ssl: kafkaTlsOptions(ssl),
    sasl: sasl ? kafkaSaslOptions(sasl, config.region) : undefined,
    warnings,
    warned: false,
  };
  resolved.set(config.kafka, security);
  return security;
}
