import pino, { type DestinationStream, type Logger } from 'pino';

export type { Logger } from 'pino';

/** Structured JSON logs on stderr (stdout stays for command output). Secrets are redacted by path. */
export function createLogger(
  options: { level?: string; name?: string; destination?: DestinationStream } = {},
): Logger {
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
    options.destination ?? stderrDestination(),
  );
}

/**
 * Logs to stderr, given up for good at the stream's first error. Not pino.destination: its exit hook
 * flushes synchronously and retries any error but EAGAIN for ever, so with the log reader gone
 * (`ttlstream run 2>&1 | tee log`, then Ctrl-C kills tee) the process spun on EPIPE and no signal
 * could stop it. process.stderr writes synchronously to files and terminals; a pipe takes what fits in it at once and
 * the process holds the rest, which the one exit path (core/exit.ts) waits for. A log nobody can read is not worth a
 * stuck process.
 */
export function stderrDestination(stream: NodeJS.WriteStream = process.stderr): DestinationStream {
  let broken = false;
  stream.on('error', () => {
    broken = true;
  });
  return {
    write(line: string) {
      if (broken || stream.destroyed || stream.writableEnded) return;
      stream.write(line);
    },
  };
}

/** A logger that drops everything; for tests and library use without a logger. */
export const silentLogger: Logger = pino({ level: 'silent' });
