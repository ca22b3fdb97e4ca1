import type { TtlstreamConfig } from '../../core/config';
import { ConfigError } from '../../core/errors';

/**
 * A Kafka connection that cannot work until a setting changes: the login was refused, the broker's certificate
 * is not trusted or not for this name, or one side speaks TLS and the other does not. A ConfigError, so the
 * command exits 2; never retried (a retry meets the same broker with the same settings).
 */
export class KafkaSetupError extends ConfigError {}

interface ErrorLike {
  name?: string;
  message?: string;
  code?: string;
  broker?: string;
}

/** Node's codes for a certificate chain that does not lead to a trusted CA. */
const UNTRUSTED = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
]);
const EXPIRED = new Set(['CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID']);

/** Reason of a connection error without kafkajs's "Connection error: " prefix. */
function reasonOf(e: ErrorLike): string {
  const message = (e.message ?? '').replace(/^Connection error: /, '');
  // OpenSSL's alert text carries its source file and line: the alert's name is what an operator can use.
  const alert = /alert ([a-z ]+?)(?::|$)/i.exec(message);
  if (/SSL routines/.test(message) && alert) return `TLS alert: ${alert[1] ?? ''}`;
  // Node's own advice after an unverifiable chain ("; if the root CA is installed locally, try …") would make
  // the line name two remedies; the settings to change are named after it.
  return message.replace(/; if the root CA is installed locally.*$/, '');
}

function saslSettings(config: TtlstreamConfig): string {
  const sasl = config.kafka.sasl;
  switch (sasl?.mechanism) {
    case 'oauthbearer':
      return sasl.tokenCommand !== undefined
        ? 'the token of kafka.sasl.tokenCommand (TTLSTREAM_KAFKA_SASL_TOKEN_COMMAND)'
        : 'the token in kafka.sasl.tokenFile (TTLSTREAM_KAFKA_SASL_TOKEN_FILE)';
    case 'aws-msk-iam':
      return "the AWS credentials' IAM policy (kafka-cluster:Connect) and kafka.sasl.region (TTLSTREAM_KAFKA_SASL_REGION)";
    default:
      return 'kafka.sasl.username / kafka.sasl.password (TTLSTREAM_KAFKA_SASL_USERNAME / TTLSTREAM_KAFKA_SASL_PASSWORD)';
  }
}

function login(config: TtlstreamConfig): string {
  const sasl = config.kafka.sasl;
  if (!sasl) return 'the login';
  return sasl.username !== undefined
    ? `the SASL ${sasl.mechanism} login of ${sasl.username}`
    : `the SASL ${sasl.mechanism} login`;
}

/**
 * The permanent Kafka failure in an error chain, as one line naming Kafka, the broker and the setting to change;
 * undefined when the failure may pass (a broker down or restarting). Pure.
 */
export function explainKafkaSetup(errors: ErrorLike[], config: TtlstreamConfig): KafkaSetupError | undefined {
  const broker = errors.find((e) => typeof e.broker === 'string')?.broker ?? config.kafka.brokers.join(',');
  const cause = errors[errors.length - 1];
  const tls = config.kafka.ssl !== false;
  const mechanismMissing = errors.find((e) =>
    /mechanism is not supported by the server/.test(e.message ?? ''),
  );
  if (mechanismMissing)
    return new KafkaSetupError(
      `Kafka broker ${broker} does not offer SASL ${config.kafka.sasl?.mechanism ?? ''} on this listener: change kafka.sasl.mechanism (TTLSTREAM_KAFKA_SASL_MECHANISM) or kafka.brokers: ${mechanismMissing.message ?? ''}`,
    );
  const auth = errors.find((e) => e.name === 'KafkaJSSASLAuthenticationError');
  if (auth)
    return new KafkaSetupError(
      `Kafka broker ${broker} refused ${login(config)}: check ${saslSettings(config)}: ${auth.message ?? ''}`,
    );
  const token = errors.find((e) => e.name === 'TokenError');
  if (token) return new KafkaSetupError(`Kafka login to ${broker} has no token: ${token.message ?? ''}`);
  const code = errors.find(
    (e) =>
      e.code !== undefined &&
      (UNTRUSTED.has(e.code) || EXPIRED.has(e.code) || e.code === 'ERR_TLS_CERT_ALTNAME_INVALID'),
  )?.code;
  const reason = cause ? reasonOf(cause) : '';
  if (code !== undefined && UNTRUSTED.has(code))
    return new KafkaSetupError(
      `Kafka broker ${broker}: its TLS certificate is not trusted (${reason}): set kafka.ssl.caFile (TTLSTREAM_KAFKA_SSL_CA_FILE) or NODE_EXTRA_CA_CERTS to the CA that signed it`,
    );
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID')
    return new KafkaSetupError(
      `Kafka broker ${broker}: its TLS certificate is not for this name (${reason}): use a broker address the certificate names in kafka.brokers, or set kafka.ssl.servername (TTLSTREAM_KAFKA_SSL_SERVERNAME)`,
    );
  if (code !== undefined && EXPIRED.has(code))
    return new KafkaSetupError(
      `Kafka broker ${broker}: its TLS certificate is out of its validity period (${reason}): the broker needs a current certificate`,
    );
  if (
    tls &&
    errors.some((e) =>
      /before secure TLS connection was established|wrong version number|packet length too long/i.test(
        e.message ?? '',
      ),
    )
  )
    return new KafkaSetupError(
      `Kafka broker ${broker} does not answer TLS (${reason}): it seems to speak plaintext; turn kafka.ssl (TTLSTREAM_KAFKA_SSL) off, or use its TLS listener in kafka.brokers`,
    );
  if (
    tls &&
    errors.some((e) =>
      /certificate required|handshake failure|unknown ca|bad certificate/i.test(e.message ?? ''),
    )
  )
    return new KafkaSetupError(
      `Kafka broker ${broker} refused the TLS handshake (${reason}): it requires a client certificate it trusts: set kafka.ssl.certFile and kafka.ssl.keyFile (TTLSTREAM_KAFKA_SSL_CERT_FILE / TTLSTREAM_KAFKA_SSL_KEY_FILE)`,
    );
  return undefined;
}

/** The one message of a plaintext client at a TLS listener (the broker closes the connection at the first request). */
export function plaintextAtTlsListener(broker: string): KafkaSetupError {
  return new KafkaSetupError(
    `Kafka broker ${broker} closed the connection at the first request and answers TLS: turn kafka.ssl (TTLSTREAM_KAFKA_SSL) on`,
  );
}

/**
 * Whether something at `broker` completes a TLS handshake (certificate not checked): tells a TLS listener that a
 * plaintext client reached (the broker just closes the connection) from a broker that went away.
 */
export async function speaksTls(broker: string, timeoutMs = 2000): Promise<boolean> {
  const at = broker.lastIndexOf(':');
  const host = broker.slice(0, at);
  const port = Number(broker.slice(at + 1));
  // node:tls loads here, on a failure, not with every command's context.
  const { connect: tlsConnect } = await import('node:tls');
  return new Promise((resolve) => {
    const socket = tlsConnect({ host, port, rejectUnauthorized: false, timeout: timeoutMs });
    const done = (yes: boolean): void => {
      socket.destroy();
      resolve(yes);
    };
    socket.once('secureConnect', () => done(true));
    // A broker that wants a client certificate may refuse the handshake with an alert: still TLS.
    socket.once('error', (err: Error) =>
      done(/alert|certificate required|handshake failure/i.test(err.message)),
    );
    socket.once('timeout', () => done(false));
  });
}
