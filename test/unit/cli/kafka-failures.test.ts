import { readFileSync } from 'node:fs';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import { cli, fakeIo, QUIET_OFFLINE } from '../../support/cli';
import { makeTestCerts, type TestCerts } from '../../support/test-certs';

/**
 * Kafka failures that only a setting can mend, against real sockets standing in for brokers: a TLS listener with
 * the stack's certificate, and a plaintext listener that closes a connection whose first bytes are not a
 * request it accepts (what Kafka does with a TLS ClientHello). Login failures need a real broker:
 * test/integration/security.
 */
function portOf(server: TcpServer | TlsServer): number {
  const a = server.address();
  return typeof a === 'object' && a ? a.port : 0;
}

let certs: TestCerts;
let tls: TlsServer;
let plain: TcpServer;
let tlsBroker: string;
let plainBroker: string;
const sockets = new Set<{ destroy(): void }>();

beforeAll(async () => {
  certs = makeTestCerts();
  tls = createTlsServer({ key: readFileSync(certs.serverKey), cert: readFileSync(certs.server) }, (s) => {
    s.on('error', () => undefined);
  });
  tls.on('connection', (s) => sockets.add(s));
  tls.on('tlsClientError', () => undefined);
  plain = createTcpServer((s) => {
    s.on('error', () => undefined);
    s.on('data', () => s.destroy());
  });
  await Promise.all([
    new Promise<void>((r) => tls.listen(0, '127.0.0.1', () => r())),
    new Promise<void>((r) => plain.listen(0, '127.0.0.1', () => r())),
  ]);
  tlsBroker = `127.0.0.1:${portOf(tls)}`;
  plainBroker = `127.0.0.1:${portOf(plain)}`;
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await Promise.all([new Promise((r) => tls.close(r)), new Promise((r) => plain.close(r))]);
});

/** `run --roles archiver` outside a local stack needs archive.url set (cli/run/roles.ts); these runs never reach it. */
const ARCHIVE = { TTLSTREAM_ARCHIVE_URL: 'file:///tmp/ttlstream-archive' };

const cases: Array<[string, () => NodeJS.ProcessEnv, () => string]> = [
  [
    'a certificate no trusted CA signed',
    () => ({ TTLSTREAM_KAFKA_BROKERS: tlsBroker, TTLSTREAM_KAFKA_SSL: 'true' }),
    () =>
      `ttlstream: Kafka broker ${tlsBroker}: its TLS certificate is not trusted (unable to verify the first certificate): set kafka.ssl.caFile (TTLSTREAM_KAFKA_SSL_CA_FILE) or NODE_EXTRA_CA_CERTS to the CA that signed it\n`,
  ],
  [
    'a CA file of another CA',
    () => ({ TTLSTREAM_KAFKA_BROKERS: tlsBroker, TTLSTREAM_KAFKA_SSL_CA_FILE: certs.otherCa }),
    () =>
      `ttlstream: Kafka broker ${tlsBroker}: its TLS certificate is not trusted (unable to verify the first certificate): set kafka.ssl.caFile (TTLSTREAM_KAFKA_SSL_CA_FILE) or NODE_EXTRA_CA_CERTS to the CA that signed it\n`,
  ],
  [
    'a certificate for another name',
    () => ({
      TTLSTREAM_KAFKA_BROKERS: tlsBroker,
      TTLSTREAM_KAFKA_SSL_CA_FILE: certs.ca,
      TTLSTREAM_KAFKA_SSL_SERVERNAME: 'kafka.example.invalid',
    }),
    () =>
      `ttlstream: Kafka broker ${tlsBroker}: its TLS certificate is not for this name (Hostname/IP does not match certificate's altnames: Host: kafka.example.invalid. is not in the cert's altnames: DNS:localhost, IP Address:127.0.0.1): use a broker address the certificate names in kafka.brokers, or set kafka.ssl.servername (TTLSTREAM_KAFKA_SSL_SERVERNAME)\n`,
  ],
  [
    'TLS towards a plaintext listener',
    () => ({ TTLSTREAM_KAFKA_BROKERS: plainBroker, TTLSTREAM_KAFKA_SSL_CA_FILE: certs.ca }),
    () =>
      `ttlstream: Kafka broker ${plainBroker} does not answer TLS (Client network socket disconnected before secure TLS connection was established): it seems to speak plaintext; turn kafka.ssl (TTLSTREAM_KAFKA_SSL) off, or use its TLS listener in kafka.brokers\n`,
  ],
  [
    'plaintext towards a TLS listener',
    () => ({ TTLSTREAM_KAFKA_BROKERS: tlsBroker }),
    () =>
      `ttlstream: Kafka broker ${tlsBroker} closed the connection at the first request and answers TLS: turn kafka.ssl (TTLSTREAM_KAFKA_SSL) on\n`,
  ],
];

describe('a Kafka setting that cannot work: one line naming Kafka, the broker and the setting; exit 2', () => {
  it.each(cases)(
    '%s (a one-shot command)',
    async (_what, env, line) => {
      const r = await cli(['topics', 'apply'], { ...QUIET_OFFLINE, ...env() });
      expect(r.stderr).toBe(line());
      expect(r.code).toBe(2);
      expect(r.ms).toBeLessThan(10_000);
    },
    30_000,
  );

  it.each(cases)(
    '%s (`run`: no retries, within 10 s)',
    async (_what, env, line) => {
      const r = await cli(['run', '--roles', 'archiver'], { ...QUIET_OFFLINE, ...ARCHIVE, ...env() });
      expect(r.stderr).toBe(line());
      expect(r.code).toBe(2);
      expect(r.ms).toBeLessThan(10_000);
    },
    30_000,
  );

  it('a broker that is only down is not a setting: `run` goes on waiting for it as before', async () => {
    const { freePort } = await import('../../support/cli-process');
    const broker = `127.0.0.1:${await freePort()}`;
    const io = fakeIo({ env: { TTLSTREAM_QUIET: '1', TTLSTREAM_KAFKA_BROKERS: broker } });
    const { CliContext } = await import('../../../cli/kit/context');
    const ctx = new CliContext(io, {}, true);
    await expect(ctx.checkKafka()).resolves.toBeUndefined();
    await ctx.close();
  });

  it('the endpoints line says TLS and SASL are on, and rejectUnauthorized false warns', async () => {
    const r = await cli(['topics', 'apply'], {
      ...QUIET_OFFLINE,
      TTLSTREAM_QUIET: '',
      TTLSTREAM_KAFKA_BROKERS: plainBroker, // fails fast: the lines come before any connection
      TTLSTREAM_KAFKA_SSL_CA_FILE: certs.ca,
      TTLSTREAM_KAFKA_SSL_REJECT_UNAUTHORIZED: 'false',
      TTLSTREAM_KAFKA_SASL_MECHANISM: 'scram-sha-512',
      TTLSTREAM_KAFKA_SASL_USERNAME: 'alice',
      TTLSTREAM_KAFKA_SASL_PASSWORD: 'alice-secret',
    });
    // A local stack's endpoints file in the working folder adds a note line; it is not what is tested here.
    const lines = r.stderr.split('\n').filter((l) => !l.startsWith('note: found '));
    expect(lines[0]).toBe(
      `endpoints: DynamoDB AWS default for region us-east-1 (region: default); Kafka ${plainBroker} (TTLSTREAM_KAFKA_BROKERS), TLS (CA file ${certs.ca}, certificates NOT verified), SASL scram-sha-512 as alice`,
    );
    expect(lines[1]).toBe(
      "ttlstream: warning: kafka.ssl.rejectUnauthorized is false: the brokers' certificates are NOT verified, so anyone on the path can read and change the stream; set kafka.ssl.caFile (TTLSTREAM_KAFKA_SSL_CA_FILE) instead",
    );
    expect(r.stderr).not.toContain('alice-secret');
  }, 30_000);

  it('a missing CA file stops the start with the setting named, before any connection', async () => {
    const r = await cli(['run', '--roles', 'archiver'], {
      ...QUIET_OFFLINE,
      ...ARCHIVE,
      TTLSTREAM_KAFKA_BROKERS: tlsBroker,
      TTLSTREAM_KAFKA_SSL_CA_FILE: '/nonexistent/ca.pem',
    });
    expect(r.stderr).toBe(
      "ttlstream: kafka.ssl.caFile (TTLSTREAM_KAFKA_SSL_CA_FILE) /nonexistent/ca.pem: ENOENT: no such file or directory, open '/nonexistent/ca.pem'\n",
    );
    expect(r.code).toBe(2);
  });
});
