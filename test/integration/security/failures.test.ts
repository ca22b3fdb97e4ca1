import { humanLines, runCli } from '../../support/cli-process';
import { broker, certs, listenerEnv, TOKEN_COMMAND } from './listeners.support';

/**
 * Against the stack's secured listeners, each Kafka setting that can never work stops `run` (and a
 * one-shot command) with one line naming Kafka, the broker and the setting, exit code 2, within 10 s: no
 * retries. Touches nothing shared (no topic or group is created).
 */
const quiet = { TTLSTREAM_QUIET: '1', TTLSTREAM_LOG_LEVEL: 'warn' };

const cases: Array<{ what: string; args: string[]; env: () => NodeJS.ProcessEnv; line: () => string }> = [
  {
    what: 'a wrong SCRAM password',
    args: ['run', '--roles', 'archiver'],
    env: () => ({ ...listenerEnv('scram'), TTLSTREAM_KAFKA_SASL_PASSWORD: 'not-the-password' }),
    line: () =>
      `ttlstream: Kafka broker ${broker('scram')} refused the SASL scram-sha-512 login of ttlstream: check kafka.sasl.username / kafka.sasl.password (TTLSTREAM_KAFKA_SASL_USERNAME / TTLSTREAM_KAFKA_SASL_PASSWORD): SASL SCRAM SHA512 authentication failed: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512`,
  },
  {
    what: 'a wrong SCRAM password (one-shot command)',
    args: ['topics', 'describe'],
    env: () => ({ ...listenerEnv('scram'), TTLSTREAM_KAFKA_SASL_PASSWORD: 'not-the-password' }),
    line: () =>
      `ttlstream: Kafka broker ${broker('scram')} refused the SASL scram-sha-512 login of ttlstream: check kafka.sasl.username / kafka.sasl.password (TTLSTREAM_KAFKA_SASL_USERNAME / TTLSTREAM_KAFKA_SASL_PASSWORD): SASL SCRAM SHA512 authentication failed: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512`,
  },
  {
    what: 'a token the broker rejects',
    args: ['run', '--roles', 'archiver'],
    env: () => ({ ...listenerEnv('oauth'), TTLSTREAM_KAFKA_SASL_TOKEN_COMMAND: 'echo not-a-jwt' }),
    line: () =>
      `ttlstream: Kafka broker ${broker('oauth')} refused the SASL oauthbearer login: check the token of kafka.sasl.tokenCommand (TTLSTREAM_KAFKA_SASL_TOKEN_COMMAND): SASL OAUTHBEARER authentication failed: the broker answered {"status":"invalid_token"}`,
  },
  {
    what: 'a token command that fails',
    args: ['run', '--roles', 'archiver'],
    env: () => ({
      ...listenerEnv('oauth'),
      TTLSTREAM_KAFKA_SASL_TOKEN_COMMAND: `${TOKEN_COMMAND} && exit 4`,
    }),
    line: () =>
      `ttlstream: Kafka login to ${broker('oauth')} has no token: kafka.sasl.tokenCommand (TTLSTREAM_KAFKA_SASL_TOKEN_COMMAND): the command failed (exit code 4)`,
  },
  {
    what: 'the private CA not trusted',
    args: ['run', '--roles', 'archiver'],
    env: () => ({
      ...listenerEnv('scram'),
      TTLSTREAM_KAFKA_SSL_CA_FILE: undefined,
      TTLSTREAM_KAFKA_SSL: 'true',
    }),
    line: () =>
      `ttlstream: Kafka broker ${broker('scram')}: its TLS certificate is not trusted (self-signed certificate in certificate chain): set kafka.ssl.caFile (TTLSTREAM_KAFKA_SSL_CA_FILE) or NODE_EXTRA_CA_CERTS to the CA that signed it`,
  },
  {
    what: 'a certificate for another name',
    args: ['run', '--roles', 'archiver'],
    env: () => ({ ...listenerEnv('mtls'), TTLSTREAM_KAFKA_SSL_SERVERNAME: 'kafka.example.invalid' }),
    line: () =>
      `ttlstream: Kafka broker ${broker('mtls')}: its TLS certificate is not for this name (Hostname/IP does not match certificate's altnames: Host: kafka.example.invalid. is not in the cert's altnames: DNS:localhost, IP Address:127.0.0.1): use a broker address the certificate names in kafka.brokers, or set kafka.ssl.servername (TTLSTREAM_KAFKA_SSL_SERVERNAME)`,
  },
  {
    what: 'TLS towards the plaintext listener',
    args: ['run', '--roles', 'archiver'],
    env: () => ({ TTLSTREAM_KAFKA_BROKERS: broker('plaintext'), TTLSTREAM_KAFKA_SSL_CA_FILE: certs.ca }),
    line: () =>
      `ttlstream: Kafka broker ${broker('plaintext')} does not answer TLS (Client network socket disconnected before secure TLS connection was established): it seems to speak plaintext; turn kafka.ssl (TTLSTREAM_KAFKA_SSL) off, or use its TLS listener in kafka.brokers`,
  },
  {
    what: 'plaintext towards a TLS listener',
    args: ['run', '--roles', 'archiver'],
    env: () => ({ TTLSTREAM_KAFKA_BROKERS: broker('mtls') }),
    line: () =>
      `ttlstream: Kafka broker ${broker('mtls')} closed the connection at the first request and answers TLS: turn kafka.ssl (TTLSTREAM_KAFKA_SSL) on`,
  },
  {
    what: 'no client certificate for the mutual-TLS listener',
    args: ['run', '--roles', 'archiver'],
    env: () => ({ TTLSTREAM_KAFKA_BROKERS: broker('mtls'), TTLSTREAM_KAFKA_SSL_CA_FILE: certs.ca }),
    line: () =>
      `ttlstream: Kafka broker ${broker('mtls')} refused the TLS handshake (TLS alert: bad certificate): it requires a client certificate it trusts: set kafka.ssl.certFile and kafka.ssl.keyFile (TTLSTREAM_KAFKA_SSL_CERT_FILE / TTLSTREAM_KAFKA_SSL_KEY_FILE)`,
  },
];

describe('secured Kafka: a setting that can never work is one line and exit 2 within 10 s', () => {
  // The 10 s are the command's own: how long a process takes to start and print its configuration, measured on
  // this machine in the same run, is not counted (on a loaded 2-core runner a start alone took up to 5 s).
  let startMs = 0;
  beforeAll(async () => {
    const started = await runCli(['config'], { ...quiet, ...listenerEnv('scram') }, 30_000);
    expect(started.code).toBe(0);
    startMs = started.ms;
  });

  it.each(cases)('$what: $args', async ({ args, env, line }) => {
    const r = await runCli(args, { ...quiet, ...env() }, 30_000);
    expect({ lines: humanLines(r.stderr), code: r.code }).toEqual({ lines: [line()], code: 2 });
    expect(r.ms - startMs).toBeLessThan(10_000);
  });
});
