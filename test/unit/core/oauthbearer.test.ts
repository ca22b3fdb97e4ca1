import { fromKafkaBytes, oauthBearerMechanism, toKafkaBytes } from '../../../core/oauthbearer';

/** One login against a fake saslAuthenticate that answers `answer` (or throws it). */
async function login(answer: Buffer | Error | undefined): Promise<unknown> {
  try {
    await oauthBearerMechanism(async () => 'tok')
      .authenticationProvider({
        host: 'h',
        port: 1,
        logger: {} as never,
        saslAuthenticate: async <T>({
          response,
        }: {
          response?: { decode: (b: Buffer) => Buffer | Promise<Buffer>; parse: (b: Buffer) => T };
        }) => {
          if (answer instanceof Error) throw answer;
          // As kafkajs does: the answer's bytes with their length, decoded by the mechanism.
          return answer && response ? response.parse(await response.decode(toKafkaBytes(answer))) : undefined;
        },
      })
      .authenticate();
    return undefined;
  } catch (err) {
    return err;
  }
}

describe('OAUTHBEARER login', () => {
  it('payloads cross kafkajs as Kafka BYTES (length first)', () => {
    expect(toKafkaBytes(Buffer.from('ab'))).toEqual(Buffer.from([0, 0, 0, 2, 0x61, 0x62]));
    expect(fromKafkaBytes(Buffer.from([0, 0, 0, 2, 0x61, 0x62]))).toEqual(Buffer.from('ab'));
    expect(fromKafkaBytes(Buffer.from([0xff, 0xff, 0xff, 0xff]))).toEqual(Buffer.alloc(0));
  });

  it('an empty answer is a login', async () => {
    expect(await login(Buffer.alloc(0))).toBeUndefined();
    expect(await login(undefined)).toBeUndefined();
  });

  it("an error challenge is a failed login, not retried, with the broker's words", async () => {
    const err = (await login(Buffer.from('{"status":"invalid_token"}'))) as Error & { retriable?: boolean };
    expect(err.name).toBe('KafkaJSSASLAuthenticationError');
    expect(err.message).toBe(
      'SASL OAUTHBEARER authentication failed: the broker answered {"status":"invalid_token"}',
    );
    expect(err.retriable).toBe(false);
  });

  it('an error code from the broker is a failed login too', async () => {
    const err = (await login(new Error('Authentication failed: invalid signature'))) as Error;
    expect(err.name).toBe('KafkaJSSASLAuthenticationError');
    expect(err.message).toBe(
      'SASL OAUTHBEARER authentication failed: Authentication failed: invalid signature',
    );
  });
});
