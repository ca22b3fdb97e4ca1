import { join } from 'node:path';
import { certsIn } from '../../support/test-certs';
import {
  stackDataDir,
  securedKafkaPort,
  stackHost,
  stackPort,
  STACK_SCRAM_USER,
  type SecuredListener,
} from '../../support/ports';

/** The stack's certificates (infra/certs.sh into the lane's data dir, tls/). */
export const certs = certsIn(join(stackDataDir(), 'tls'));

export function broker(listener: SecuredListener | 'plaintext'): string {
  const port = listener === 'plaintext' ? stackPort('kafka') : securedKafkaPort(listener);
  return `${stackHost()}:${port}`;
}

/**
 * A command printing an unsecured JWT (alg none) valid for an hour, as Kafka's built-in OAUTHBEARER validator
 * accepts: what an identity provider's CLI would print.
 */
export const TOKEN_COMMAND = `${process.execPath} -e 'const p=(o)=>Buffer.from(JSON.stringify(o)).toString("base64url");const now=Math.floor(Date.now()/1000);console.log(p({alg:"none"})+"."+p({sub:"ttlstream",iat:now,exp:now+3600})+".")'`;

/** The environment that puts a command on `listener` with the settings a user would write. */
export function listenerEnv(listener: SecuredListener): NodeJS.ProcessEnv {
  const tls = { TTLSTREAM_KAFKA_BROKERS: broker(listener), TTLSTREAM_KAFKA_SSL_CA_FILE: certs.ca };
  switch (listener) {
    case 'scram':
      return {
        ...tls,
        TTLSTREAM_KAFKA_SASL_MECHANISM: 'scram-sha-512',
        TTLSTREAM_KAFKA_SASL_USERNAME: STACK_SCRAM_USER.username,
        TTLSTREAM_KAFKA_SASL_PASSWORD: STACK_SCRAM_USER.password,
      };
    case 'mtls':
      return {
        ...tls,
        TTLSTREAM_KAFKA_SSL_CERT_FILE: certs.client,
        TTLSTREAM_KAFKA_SSL_KEY_FILE: certs.clientKey,
      };
    case 'oauth':
      return {
        ...tls,
        TTLSTREAM_KAFKA_SASL_MECHANISM: 'oauthbearer',
        TTLSTREAM_KAFKA_SASL_TOKEN_COMMAND: TOKEN_COMMAND,
      };
  }
}
