import pino, { type Logger } from 'pino';

export type { Logger } from 'pino';

/** Structured JSON logs on stderr (stdout stays for command output). Secrets are redacted by path. */
export function createLogger(options: { level?: string; name?: string } = {}): Logger {
  return pino(
    {
      name: options.name ?? 'ttlstream',
      level: options.level ?? process.env.TTLSTREAM_LOG_LEVEL ?? 'info',
      redact: {
        paths: [
          '*.password',
          '*.secretAccessKey',
          '*.tokens',
          '*.authorization',
          'headers.authorization',
          'req.headers.authorization',
          'config.api.tokens',
          'config.api.awsCredentials',
          'config.kafka.sasl',
          'config.dynamodb.secretAccessKey',
          'config.archive.s3SecretAccessKey',
        ],
        censor: '[redacted]',
      },
    },
    pino.destination({ fd: 2, sync: false }),
  );
}

/** A logger that drops everything; for tests and library use without a logger. */
export const silentLogger: Logger = pino({ level: 'silent' });
