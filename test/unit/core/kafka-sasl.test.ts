import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Mechanism, SASLOptions } from 'kafkajs';
import { parseConfig } from '../../../core/config';
import { fromKafkaBytes } from '../../../core/oauthbearer';
import {
  describeKafkaSasl,
  kafkaSaslOptions,
  tokenFromCommand,
  tokenFromFile,
  tokenFromMskIam,
} from '../../../core/kafka-sasl';
import {
  jwtExpiry,
  parseTokenText,
  REFRESH_FACTOR,
  RefreshingToken,
  TokenError,
  UNKNOWN_LIFETIME_REFRESH_MS,
} from '../../../core/refreshing-token';

/** An unsecured JWT (alg none), as Kafka's built-in OAUTHBEARER validator accepts. */
function jwt(claims: object): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'none' })}.${part(claims)}.`;
}

/** What `logins` authentications of these SASL options send as their first message (a broker that accepts). */
async function initialResponses(options: SASLOptions | Mechanism, logins: number): Promise<string[]> {
  expect(options.mechanism).toBe('oauthbearer');
  const sent: string[] = [];
  for (let i = 0; i < logins; i++) {
    await (options as Mechanism)
      .authenticationProvider({
        host: 'h',
        port: 1,
        logger: {} as never,
        saslAuthenticate: async ({ request }) => {
          sent.push(fromKafkaBytes(await request.encode()).toString('utf8'));
          return undefined;
        },
      })
      .authenticate();
  }
  return sent;
}

const dir = mkdtempSync(join(tmpdir(), 'ttlstream-sasl-'));

describe('kafka.sasl settings', () => {
  const sasl =
    (s: object, ssl: unknown = true) =>
    () =>
      parseConfig({ kafka: { ssl, sasl: s } });

  it('SASL without TLS is refused, naming both settings, unless allowPlaintextSasl', () => {
    expect(sasl({ mechanism: 'scram-sha-512', username: 'u', password: 'p' }, false)).toThrow(
      'kafka.ssl (TTLSTREAM_KAFKA_SSL): SASL without TLS would send the credentials in clear: turn TLS on (kafka.ssl), or set kafka.allowPlaintextSasl (TTLSTREAM_KAFKA_ALLOW_PLAINTEXT_SASL) to true for a network you trust',
    );
    expect(
      parseConfig({
        kafka: { allowPlaintextSasl: true, sasl: { mechanism: 'plain', username: 'u', password: 'p' } },
      }).kafka.sasl?.mechanism,
    ).toBe('plain');
  });

  it.each([
    [
      { mechanism: 'scram-sha-256', username: 'u' },
      'kafka.sasl.password (TTLSTREAM_KAFKA_SASL_PASSWORD): required with mechanism scram-sha-256',
    ],
    [
      { mechanism: 'oauthbearer' },
      'kafka.sasl.tokenCommand (TTLSTREAM_KAFKA_SASL_TOKEN_COMMAND): mechanism oauthbearer takes exactly one of tokenCommand and tokenFile',
    ],
    [
      { mechanism: 'oauthbearer', tokenFile: '/t', tokenCommand: 'x' },
      'takes exactly one of tokenCommand and tokenFile',
    ],
    [
      { mechanism: 'oauthbearer', tokenFile: '/t', password: 'p' },
      'kafka.sasl.password (TTLSTREAM_KAFKA_SASL_PASSWORD): not used by mechanism oauthbearer',
    ],
    [
      { mechanism: 'aws-msk-iam', username: 'u' },
      'kafka.sasl.username (TTLSTREAM_KAFKA_SASL_USERNAME): not used by mechanism aws-msk-iam',
    ],
    [{ mechanism: 'gssapi' }, 'kafka.sasl.mechanism (TTLSTREAM_KAFKA_SASL_MECHANISM)'],
  ])('%j is refused with the setting named', (s, message) => {
    expect(sasl(s)).toThrow(message);
  });

  it('the endpoints line says the mechanism and who logs in, never a secret', () => {
    expect(
      describeKafkaSasl({ mechanism: 'scram-sha-512', username: 'alice', password: 'secret' }, 'eu-west-1'),
    ).toBe('SASL scram-sha-512 as alice');
    expect(describeKafkaSasl({ mechanism: 'aws-msk-iam' }, 'eu-west-1')).toBe('SASL aws-msk-iam (eu-west-1)');
    expect(describeKafkaSasl({ mechanism: 'aws-msk-iam', region: 'us-east-2' }, 'eu-west-1')).toBe(
      'SASL aws-msk-iam (us-east-2)',
    );
    expect(describeKafkaSasl({ mechanism: 'oauthbearer', tokenFile: '/run/token' }, 'x')).toBe(
      'SASL oauthbearer (token file /run/token)',
    );
    expect(describeKafkaSasl(undefined, 'x')).toBeUndefined();
  });
});

describe('token texts', () => {
  it('a JWT expires at its exp claim; JSON carries its own expiry; an opaque token does not say', () => {
    expect(parseTokenText(` ${jwt({ sub: 'a', exp: 2000 })}\n`, 's')).toEqual({
      token: jwt({ sub: 'a', exp: 2000 }),
      expiresAt: 2_000_000,
    });
    expect(parseTokenText('{"token":"abc","expiresAt":5}', 's')).toEqual({ token: 'abc', expiresAt: 5 });
    expect(parseTokenText('opaque-token', 's')).toEqual({ token: 'opaque-token', expiresAt: undefined });
    expect(jwtExpiry('a.b.c')).toBeUndefined();
  });

  it.each([
    ['', 's: empty token'],
    ['{"token":', 's: starts with "{" but is not valid JSON'],
    ['{"expiresAt":1}', 's: JSON without a "token" string'],
    ['{"token":"t","expiresAt":"soon"}', 's: "expiresAt" is not a number of milliseconds since the epoch'],
  ])('%j: TokenError', (text, message) => {
    expect(() => parseTokenText(text, 's')).toThrow(new TokenError(message));
  });
});

describe('RefreshingToken', () => {
  it('reuses a token until 80 % of its lifetime, then fetches a new one before it expires', async () => {
    let now = 1_000_000;
    let fetches = 0;
    const token = new RefreshingToken(
      async () => ({ token: `t${++fetches}`, expiresAt: now + 100_000 }),
      'test',
      () => now,
    );
    expect(await token.get()).toBe('t1');
    expect(token.refreshAt).toBe(1_000_000 + 100_000 * REFRESH_FACTOR);
    now += 79_999;
    expect(await token.get()).toBe('t1');
    now += 1;
    expect(await token.get()).toBe('t2');
    expect(fetches).toBe(2);
  });

  it('a token of unknown lifetime is fetched again after 5 minutes; concurrent callers share one fetch', async () => {
    let now = 0;
    let fetches = 0;
    const token = new RefreshingToken(
      async () => ({ token: `t${++fetches}`, expiresAt: undefined }),
      'test',
      () => now,
    );
    expect(await Promise.all([token.get(), token.get(), token.get()])).toEqual(['t1', 't1', 't1']);
    now = UNKNOWN_LIFETIME_REFRESH_MS;
    expect(await token.get()).toBe('t2');
  });

  it('an expired token is refused; a failed fetch is not cached', async () => {
    let fail = true;
    const token = new RefreshingToken(
      async () => {
        if (fail) return { token: 'old', expiresAt: 500 };
        return { token: 'new', expiresAt: 5000 };
      },
      'kafka.sasl.tokenFile /t',
      () => 1000,
    );
    await expect(token.get()).rejects.toThrow(
      new TokenError('kafka.sasl.tokenFile /t: the token expired at 1970-01-01T00:00:00.500Z'),
    );
    fail = false;
    expect(await token.get()).toBe('new');
  });
});

describe('token sources', () => {
  it('a file is read again at each fetch (a sidecar may rotate it)', async () => {
    const path = join(dir, 'token');
    writeFileSync(path, jwt({ sub: 'a', exp: 9_999_999_999 }));
    const read = tokenFromFile(path);
    expect((await read()).expiresAt).toBe(9_999_999_999_000);
    writeFileSync(path, 'rotated');
    expect(await read()).toEqual({ token: 'rotated', expiresAt: undefined });
    await expect(tokenFromFile(join(dir, 'missing'))()).rejects.toThrow(
      /^kafka\.sasl\.tokenFile \(TTLSTREAM_KAFKA_SASL_TOKEN_FILE\) .*missing: ENOENT/,
    );
  });

  it('a command prints the token; its failure names the setting and its last stderr line', async () => {
    expect(await tokenFromCommand(`printf '{"token":"from-cmd","expiresAt":42}'`)()).toEqual({
      token: 'from-cmd',
      expiresAt: 42,
    });
    await expect(tokenFromCommand('echo no token here >&2; exit 3')()).rejects.toThrow(
      new TokenError(
        'kafka.sasl.tokenCommand (TTLSTREAM_KAFKA_SASL_TOKEN_COMMAND): the command failed (exit code 3): no token here',
      ),
    );
  });

  it('oauthbearer: kafkajs gets a provider of the refreshing token', async () => {
    const script = join(dir, 'count.sh');
    writeFileSync(
      script,
      `#!/bin/sh\necho run >> ${join(dir, 'runs')}\necho '${jwt({ sub: 'svc', exp: 9_999_999_999 })}'\n`,
    );
    chmodSync(script, 0o755);
    const options = kafkaSaslOptions({ mechanism: 'oauthbearer', tokenCommand: script }, 'us-east-1');
    const sent = await initialResponses(options, 2);
    expect(sent[0]).toBe(`n,,\u0001auth=Bearer ${jwt({ sub: 'svc', exp: 9_999_999_999 })}\u0001\u0001`);
    expect(sent[1]).toBe(sent[0]);
    expect((await import('node:fs')).readFileSync(join(dir, 'runs'), 'utf8')).toBe('run\n');
  });
});

/**
 * The MSK IAM token is made by aws-msk-iam-sasl-signer-js from the AWS default credential chain (here: the
 * environment). What MSK does with it cannot be tested here (no MSK); what it must contain can.
 */
describe('aws-msk-iam token', () => {
  const saved = { ...process.env };
  beforeEach(() => {
    process.env.AWS_ACCESS_KEY_ID = 'AKIDEXAMPLE';
    process.env.AWS_SECRET_ACCESS_KEY = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
    delete process.env.AWS_SESSION_TOKEN;
    delete process.env.AWS_PROFILE;
  });
  afterEach(() => {
    process.env = { ...saved };
  });

  it('is a base64url presigned kafka-cluster:Connect URL for the region, valid 15 minutes', async () => {
    const before = Date.now();
    const { token, expiresAt } = await tokenFromMskIam('eu-west-1')();
    const url = new URL(Buffer.from(token, 'base64url').toString('utf8'));
    expect(url.protocol).toBe('https:');
    expect(url.host).toBe('kafka.eu-west-1.amazonaws.com');
    expect(url.searchParams.get('Action')).toBe('kafka-cluster:Connect');
    expect(url.searchParams.get('X-Amz-Algorithm')).toBe('AWS4-HMAC-SHA256');
    expect(url.searchParams.get('X-Amz-Credential')).toMatch(
      /^AKIDEXAMPLE\/\d{8}\/eu-west-1\/kafka-cluster\/aws4_request$/,
    );
    expect(url.searchParams.get('X-Amz-Expires')).toBe('900');
    expect(url.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
    expect(url.searchParams.get('User-Agent')).toMatch(/^aws-msk-iam-sasl-signer-js\//);
    expect(token).not.toContain('wJalrXUtnFEMI');
    // X-Amz-Date has second precision.
    expect(expiresAt).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 900_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 900_000);
  });

  it('is signed again after 80 % of its 15 minutes, with the region of kafka.sasl.region or region', async () => {
    const sent = await initialResponses(kafkaSaslOptions({ mechanism: 'aws-msk-iam' }, 'ap-south-1'), 2);
    const first = (sent[0] ?? '').split('auth=Bearer ')[1]?.split('\u0001')[0] ?? '';
    expect(Buffer.from(first, 'base64url').toString()).toContain('kafka.ap-south-1.amazonaws.com');
    expect(sent[1]).toBe(sent[0]);
    let now = Date.now();
    const token = new RefreshingToken(tokenFromMskIam('us-east-2'), 'msk', () => now);
    const a = await token.get();
    expect(token.refreshAt).toBeGreaterThan(now + 0.8 * 900_000 - 2000);
    expect(token.refreshAt).toBeLessThanOrEqual(now + 0.8 * 900_000);
    now += 0.8 * 900_000;
    // Signed again: a new signature (the signing time differs) for the same region.
    jest.useFakeTimers({
      now: Date.now() + 60_000,
      doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'],
    });
    try {
      const b = await token.get();
      expect(b).not.toBe(a);
      expect(Buffer.from(b, 'base64url').toString()).toContain('kafka.us-east-2.amazonaws.com');
    } finally {
      jest.useRealTimers();
    }
  });

  it('without credentials: a TokenError naming the mechanism and the region', async () => {
    delete process.env.AWS_ACCESS_KEY_ID;
    delete process.env.AWS_SECRET_ACCESS_KEY;
    process.env.AWS_SHARED_CREDENTIALS_FILE = join(dir, 'no-credentials');
    process.env.AWS_CONFIG_FILE = join(dir, 'no-config');
    process.env.AWS_EC2_METADATA_DISABLED = 'true';
    await expect(tokenFromMskIam('eu-west-1')()).rejects.toThrow(
      /^kafka\.sasl\.mechanism aws-msk-iam: no token could be signed for region eu-west-1 \(AWS credentials\?\): /,
    );
  }, 15_000);
});
