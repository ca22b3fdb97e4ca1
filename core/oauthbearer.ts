import { KafkaJSSASLAuthenticationError, type Mechanism } from 'kafkajs';

/** kafkajs's own class (not retried, named by the CLI's explanation); its typings omit the message argument. */
const LoginFailed = KafkaJSSASLAuthenticationError as unknown as new (message: string) => Error;

/** RFC 7628's client initial response: GS2 header, then `auth=Bearer <token>`, each part closed by SOH. */
export function initialResponse(token: string): Buffer {
  return Buffer.from(`n,,\u0001auth=Bearer ${token}\u0001\u0001`, 'utf8');
}

/** kafkajs hands SASL payloads both ways as Kafka BYTES: a 32-bit big-endian length (-1: null), then the bytes. */
export function toKafkaBytes(payload: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeInt32BE(payload.length);
  return Buffer.concat([length, payload]);
}

export function fromKafkaBytes(raw: Buffer): Buffer {
  if (raw.length < 4) return raw;
  const length = raw.readInt32BE(0);
  return length <= 0 ? Buffer.alloc(0) : raw.subarray(4, 4 + length);
}

/**
 * SASL/OAUTHBEARER that reads the broker's answer. kafkajs 2.2.4's own OAUTHBEARER ignores it, and a broker that
 * rejects the token answers with an error challenge (`{"status":"invalid_token"}`, RFC 7628 §3.2.2) rather than
 * an error code: kafkajs took that for a login, sent its next request into the unfinished exchange, and the broker
 * closed the connection ("No brokers in the broker pool", retried for ever). Here a challenge is the failed login
 * it is, named with what the broker said.
 */
export function oauthBearerMechanism(token: () => Promise<string>): Mechanism {
  return {
    mechanism: 'oauthbearer',
    authenticationProvider: ({ saslAuthenticate }) => ({
      authenticate: async () => {
        const value = await token();
        let challenge: Buffer | void;
        try {
          challenge = await saslAuthenticate<Buffer>({
            request: { encode: () => toKafkaBytes(initialResponse(value)) },
            response: { decode: (raw) => fromKafkaBytes(raw), parse: (data) => data },
          });
        } catch (err) {
          throw new LoginFailed(`SASL OAUTHBEARER authentication failed: ${(err as Error).message}`);
        }
        if (challenge && challenge.length > 0)
          throw new LoginFailed(
            `SASL OAUTHBEARER authentication failed: the broker answered ${challenge.toString('utf8')}`,
          );
      },
    }),
  };
}
