import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import type { Mechanism, SASLOptions } from 'kafkajs';
import { oauthBearerMechanism } from './oauthbearer';
import type { TtlstreamConfig } from './config';
import { parseTokenText, RefreshingToken, TokenError, type ExpiringToken } from './refreshing-token';

type KafkaSasl = NonNullable<TtlstreamConfig['kafka']['sasl']>;

/** A token command that has not printed its token by then is failed (and killed). */
export const TOKEN_COMMAND_TIMEOUT_MS = 10_000;

/** Runs `kafka.sasl.tokenCommand` with the shell and reads its token from stdout. */
export function tokenFromCommand(command: string): () => Promise<ExpiringToken> {
  const source = 'kafka.sasl.tokenCommand (TTLSTREAM_KAFKA_SASL_TOKEN_COMMAND)';
  return () =>
    new Promise((resolve, reject) => {
      execFile(
        '/bin/sh',
        ['-c', command],
        { timeout: TOKEN_COMMAND_TIMEOUT_MS, maxBuffer: 1024 * 1024 },
        (err, stdout, stderr) => {
          if (err) {
            const detail = stderr.trim().split('\n').slice(-1)[0] ?? '';
            const why = err.killed
              ? `timed out after ${TOKEN_COMMAND_TIMEOUT_MS} ms`
              : `exit code ${String(err.code)}`;
            reject(new TokenError(`${source}: the command failed (${why})${detail ? `: ${detail}` : ''}`));
            return;
          }
          try {
            resolve(parseTokenText(stdout, source));
          } catch (e) {
            reject(e as Error);
          }
        },
      );
    });
}

/** Reads `kafka.sasl.tokenFile` (again at every refresh, so whatever rotates the file is followed). */
export function tokenFromFile(path: string): () => Promise<ExpiringToken> {
  const source = `kafka.sasl.tokenFile (TTLSTREAM_KAFKA_SASL_TOKEN_FILE) ${path}`;
  return async () => {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      throw new TokenError(`${source}: ${(err as Error).message}`);
    }
    return parseTokenText(text, source);
  };
}

/** An MSK IAM token, signed with the AWS default credential chain (loaded only when the mechanism is used). */
export function tokenFromMskIam(region: string): () => Promise<ExpiringToken> {
  return async () => {
    const { generateAuthToken } = await import('aws-msk-iam-sasl-signer-js');
    try {
      const { token, expiryTime } = await generateAuthToken({ region });
      return { token, expiresAt: expiryTime };
    } catch (err) {
      throw new TokenError(
        `kafka.sasl.mechanism aws-msk-iam: no token could be signed for region ${region} (AWS credentials?): ${(err as Error).message}`,
      );
    }
  };
}

/** kafkajs's SASL options for `kafka.sasl`; token mechanisms share one refreshing token per process. */
export function kafkaSaslOptions(sasl: KafkaSasl, region: string): SASLOptions | Mechanism {
  switch (sasl.mechanism) {
    case 'plain':
    case 'scram-sha-256':
    case 'scram-sha-512':
      return {
        mechanism: sasl.mechanism,
        username: sasl.username ?? '',
        password: sasl.password ?? '',
      } as SASLOptions;
    case 'oauthbearer': {
      const token =
        sasl.tokenCommand !== undefined
          ? new RefreshingToken(tokenFromCommand(sasl.tokenCommand), 'kafka.sasl.tokenCommand')
          : new RefreshingToken(tokenFromFile(sasl.tokenFile ?? ''), 'kafka.sasl.tokenFile');
      return oauthBearerMechanism(() => token.get());
    }
    case 'aws-msk-iam': {
      // MSK's IAM login is OAUTHBEARER with a signed URL as the token (what the signer package makes).
      const token = new RefreshingToken(
        tokenFromMskIam(sasl.region ?? region),
        'kafka.sasl.mechanism aws-msk-iam',
      );
      return oauthBearerMechanism(() => token.get());
    }
  }
}

/** What the `endpoints:` line says about SASL, e.g. `SASL scram-sha-512 as alice`. */
export function describeKafkaSasl(sasl: KafkaSasl | undefined, region: string): string | undefined {
  if (!sasl) return undefined;
  switch (sasl.mechanism) {
    case 'oauthbearer':
      return sasl.tokenCommand !== undefined
        ? 'SASL oauthbearer (token from kafka.sasl.tokenCommand)'
        : `SASL oauthbearer (token file ${sasl.tokenFile ?? ''})`;
    case 'aws-msk-iam':
      return `SASL aws-msk-iam (${sasl.region ?? region})`;
    default:
      return `SASL ${sasl.mechanism} as ${sasl.username ?? ''}`;
  }
}
