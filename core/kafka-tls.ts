import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import type { TtlstreamConfig } from './config';
import { envName } from './config';
import { ConfigError } from './errors';

type KafkaSsl = TtlstreamConfig['kafka']['ssl'];
type SslFields = Exclude<KafkaSsl, boolean>;
type PemField = 'caFile' | 'certFile' | 'keyFile';

/** The setting an error names, e.g. `kafka.ssl.caFile (TTLSTREAM_KAFKA_SSL_CA_FILE)`. */
function setting(at: readonly string[], field: keyof SslFields): string {
  return `${[...at, field].join('.')} (${envName([...at, field])})`;
}

function readPem(at: readonly string[], field: PemField, path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`${setting(at, field)} ${path}: ${(err as Error).message}`);
  }
  if (!/-----BEGIN [A-Z0-9 ]+-----/.test(text))
    throw new ConfigError(`${setting(at, field)} ${path}: not a PEM file (no "-----BEGIN" line)`);
  return text;
}

/** Every certificate of a PEM text must parse: a truncated CA bundle fails here, not at the first connection. */
function checkCertificates(
  at: readonly string[],
  field: Exclude<PemField, 'keyFile'>,
  path: string,
  text: string,
): void {
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0)
    throw new ConfigError(
      `${setting(at, field)} ${path}: holds no certificate (no "BEGIN CERTIFICATE" block)`,
    );
  for (const [i, block] of blocks.entries()) {
    try {
      new X509Certificate(block);
    } catch (err) {
      throw new ConfigError(
        `${setting(at, field)} ${path}: certificate ${i + 1} is not valid: ${(err as Error).message}`,
      );
    }
  }
}

/**
 * The TLS options of the Kafka client, from `kafka.ssl`: false (plaintext), or node:tls options with the PEM files
 * read and checked now, so a wrong path, an unreadable file, a file that is not PEM or a wrong key passphrase
 * stops the start with the setting's name (exit 2) instead of failing every connection later.
 */
export function kafkaTlsOptions(ssl: KafkaSsl): ConnectionOptions | false {
  return tlsOptionsOf(ssl, ['kafka', 'ssl']);
}

/** kafkaTlsOptions for another client with the same TLS fields, its errors naming `path` (e.g. schemas.registry.ssl). */
export function tlsOptionsOf(ssl: KafkaSsl, path: readonly string[]): ConnectionOptions | false {
  return readTlsOptions(ssl, path);
}

function readTlsOptions(ssl: KafkaSsl, at: readonly string[]): ConnectionOptions | false {
  if (ssl === false) return false;
  if (ssl === true) return {};
  const out: ConnectionOptions = { rejectUnauthorized: ssl.rejectUnauthorized };
  if (ssl.caFile !== undefined) {
    const ca = readPem(at, 'caFile', ssl.caFile);
    checkCertificates(at, 'caFile', ssl.caFile, ca);
    out.ca = ca;
  }
  if ((ssl.certFile === undefined) !== (ssl.keyFile === undefined))
    throw new ConfigError(
      `${setting(at, ssl.certFile === undefined ? 'certFile' : 'keyFile')}: missing; a client certificate needs both certFile and keyFile`,
    );
  if (ssl.keyPassphrase !== undefined && ssl.keyFile === undefined)
    throw new ConfigError(`${setting(at, 'keyPassphrase')}: set, but there is no keyFile`);
  if (ssl.certFile !== undefined && ssl.keyFile !== undefined) {
    const cert = readPem(at, 'certFile', ssl.certFile);
    checkCertificates(at, 'certFile', ssl.certFile, cert);
    const key = readPem(at, 'keyFile', ssl.keyFile);
    let privateKey;
    try {
      privateKey = createPrivateKey(
        ssl.keyPassphrase !== undefined ? { key, passphrase: ssl.keyPassphrase } : { key },
      );
    } catch (err) {
      const encrypted = /ENCRYPTED/.test(key);
      throw new ConfigError(
        encrypted
          ? `${setting(at, 'keyFile')} ${ssl.keyFile}: cannot decrypt the key: wrong or missing ${setting(at, 'keyPassphrase')}`
          : `${setting(at, 'keyFile')} ${ssl.keyFile}: not a private key: ${(err as Error).message}`,
      );
    }
    if (!new X509Certificate(cert).checkPrivateKey(privateKey))
      throw new ConfigError(
        `${setting(at, 'keyFile')} ${ssl.keyFile}: is not the key of ${setting(at, 'certFile')} ${ssl.certFile}`,
      );
    out.cert = cert;
    out.key = key;
    if (ssl.keyPassphrase !== undefined) out.passphrase = ssl.keyPassphrase;
  }
  if (ssl.servername !== undefined) out.servername = ssl.servername;
  return out;
}

/** What the `endpoints:` line says about TLS, e.g. `TLS (CA file ca.pem, client certificate client.pem)`. */
export function describeKafkaTls(ssl: KafkaSsl, env: NodeJS.ProcessEnv): string | undefined {
  if (ssl === false) return undefined;
  const fields = ssl === true ? undefined : ssl;
  const parts: string[] = [];
  if (fields?.caFile !== undefined) parts.push(`CA file ${fields.caFile}`);
  else
    parts.push(
      env.NODE_EXTRA_CA_CERTS ? `system CAs + NODE_EXTRA_CA_CERTS ${env.NODE_EXTRA_CA_CERTS}` : 'system CAs',
    );
  if (fields?.certFile !== undefined) parts.push(`client certificate ${fields.certFile}`);
  if (fields?.servername !== undefined) parts.push(`servername ${fields.servername}`);
  if (fields?.rejectUnauthorized === false) parts.push('certificates NOT verified');
  return `TLS (${parts.join(', ')})`;
}
