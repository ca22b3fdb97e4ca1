import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseConfig } from '../../../core/config';
import { ConfigError } from '../../../core/errors';
import { describeKafkaTls, kafkaTlsOptions } from '../../../core/kafka-tls';
import { makeTestCerts, type TestCerts } from '../../support/test-certs';
import { configFromEnv } from '../../support/config';

let certs: TestCerts;
beforeAll(() => {
  certs = makeTestCerts();
});

describe('kafka.ssl settings', () => {
  it('true, or an object of PEM files set field by field from the environment', () => {
    expect(configFromEnv({ TTLSTREAM_KAFKA_SSL: 'true' }).kafka.ssl).toBe(true);
    expect(configFromEnv({}).kafka.ssl).toBe(false);
    expect(
      configFromEnv({
        TTLSTREAM_KAFKA_SSL_CA_FILE: '/ca.pem',
        TTLSTREAM_KAFKA_SSL_CERT_FILE: '/c.pem',
        TTLSTREAM_KAFKA_SSL_KEY_FILE: '/k.pem',
        TTLSTREAM_KAFKA_SSL_KEY_PASSPHRASE: 'pass',
        TTLSTREAM_KAFKA_SSL_SERVERNAME: 'kafka.internal',
      }).kafka.ssl,
    ).toEqual({
      caFile: '/ca.pem',
      certFile: '/c.pem',
      keyFile: '/k.pem',
      keyPassphrase: 'pass',
      servername: 'kafka.internal',
      rejectUnauthorized: true,
    });
  });

  it('TTLSTREAM_KAFKA_SSL=true keeps the fields of the config file; =false with a field is a contradiction', () => {
    const file = join(certs.dir, 'config-ssl-ca.json');
    writeFileSync(file, JSON.stringify({ kafka: { ssl: { caFile: '/ca.pem' } } }));
    expect(configFromEnv({ TTLSTREAM_KAFKA_SSL: 'true' }, { file }).kafka.ssl).toEqual({
      caFile: '/ca.pem',
      rejectUnauthorized: true,
    });
    expect(() =>
      configFromEnv({ TTLSTREAM_KAFKA_SSL: 'false', TTLSTREAM_KAFKA_SSL_CA_FILE: '/ca.pem' }),
    ).toThrow(new ConfigError('TTLSTREAM_KAFKA_SSL_CA_FILE: contradicts TTLSTREAM_KAFKA_SSL=false'));
  });

  it('an unknown field is named', () => {
    expect(() => parseConfig({ kafka: { ssl: { ca: ['x'] } } })).toThrow(
      'kafka.ssl.ca (TTLSTREAM_KAFKA_SSL_CA): not a ttlstream setting',
    );
  });
});

describe('kafkaTlsOptions reads and checks the files at start-up', () => {
  const ssl = (fields: object) => ({ rejectUnauthorized: true, ...fields });

  it('plaintext, system CAs, and the files read', () => {
    expect(kafkaTlsOptions(false)).toBe(false);
    expect(kafkaTlsOptions(true)).toEqual({});
    const options = kafkaTlsOptions(
      ssl({ caFile: certs.ca, certFile: certs.client, keyFile: certs.clientKey, servername: 'localhost' }),
    );
    expect(options).toMatchObject({ rejectUnauthorized: true, servername: 'localhost' });
    expect(options && String(options.ca)).toContain('BEGIN CERTIFICATE');
    expect(options && String(options.key)).toContain('PRIVATE KEY');
  });

  it('an encrypted key with its passphrase', () => {
    const options = kafkaTlsOptions(
      ssl({
        certFile: certs.client,
        keyFile: certs.clientEncryptedKey,
        keyPassphrase: certs.clientPassphrase,
      }),
    );
    expect(options).toMatchObject({ passphrase: certs.clientPassphrase });
  });

  it.each([
    [
      'a missing CA file',
      () => ({ caFile: join(certs.dir, 'nope.pem') }),
      /^kafka\.ssl\.caFile \(TTLSTREAM_KAFKA_SSL_CA_FILE\) .*nope\.pem: ENOENT: no such file or directory/,
    ],
    [
      'a folder as the CA file',
      () => ({ caFile: certs.dir }),
      /^kafka\.ssl\.caFile \(TTLSTREAM_KAFKA_SSL_CA_FILE\) .*: EISDIR/,
    ],
    [
      'a CA file that is not PEM',
      () => {
        const path = join(certs.dir, 'ca.der');
        writeFileSync(path, Buffer.from([0x30, 0x82, 0x01, 0x0a]));
        return { caFile: path };
      },
      /^kafka\.ssl\.caFile \(TTLSTREAM_KAFKA_SSL_CA_FILE\) .*ca\.der: not a PEM file \(no "-----BEGIN" line\)$/,
    ],
    [
      'a key given as the CA file',
      () => ({ caFile: certs.clientKey }),
      /^kafka\.ssl\.caFile \(TTLSTREAM_KAFKA_SSL_CA_FILE\) .*client\.key: holds no certificate/,
    ],
    [
      'a truncated certificate',
      () => {
        const path = join(certs.dir, 'broken.pem');
        writeFileSync(path, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
        return { caFile: path };
      },
      /^kafka\.ssl\.caFile \(TTLSTREAM_KAFKA_SSL_CA_FILE\) .*broken\.pem: certificate 1 is not valid/,
    ],
    [
      'a certificate without its key',
      () => ({ certFile: certs.client }),
      /^kafka\.ssl\.keyFile \(TTLSTREAM_KAFKA_SSL_KEY_FILE\): missing; a client certificate needs both/,
    ],
    [
      'a passphrase without a key',
      () => ({ keyPassphrase: 'x' }),
      /^kafka\.ssl\.keyPassphrase \(TTLSTREAM_KAFKA_SSL_KEY_PASSPHRASE\): set, but there is no keyFile$/,
    ],
    [
      'an encrypted key with a wrong passphrase',
      () => ({ certFile: certs.client, keyFile: certs.clientEncryptedKey, keyPassphrase: 'wrong' }),
      /^kafka\.ssl\.keyFile \(TTLSTREAM_KAFKA_SSL_KEY_FILE\) .*: cannot decrypt the key: wrong or missing kafka\.ssl\.keyPassphrase \(TTLSTREAM_KAFKA_SSL_KEY_PASSPHRASE\)$/,
    ],
    [
      'an encrypted key without a passphrase',
      () => ({ certFile: certs.client, keyFile: certs.clientEncryptedKey }),
      /cannot decrypt the key: wrong or missing kafka\.ssl\.keyPassphrase/,
    ],
    [
      'the key of another certificate',
      () => ({ certFile: certs.client, keyFile: certs.serverKey }),
      /^kafka\.ssl\.keyFile \(TTLSTREAM_KAFKA_SSL_KEY_FILE\) .*server\.key: is not the key of kafka\.ssl\.certFile/,
    ],
  ])('%s: ConfigError naming the setting', (_what, fields, message) => {
    let thrown: unknown;
    try {
      kafkaTlsOptions(ssl(fields()));
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as Error).message).toMatch(message);
  });
});

describe('describeKafkaTls (the endpoints line)', () => {
  it('says which CAs are trusted and what else is set', () => {
    expect(describeKafkaTls(false, {})).toBeUndefined();
    expect(describeKafkaTls(true, {})).toBe('TLS (system CAs)');
    expect(describeKafkaTls(true, { NODE_EXTRA_CA_CERTS: '/etc/ca.pem' })).toBe(
      'TLS (system CAs + NODE_EXTRA_CA_CERTS /etc/ca.pem)',
    );
    expect(
      describeKafkaTls(
        { caFile: '/ca.pem', certFile: '/c.pem', keyFile: '/k.pem', rejectUnauthorized: false },
        {},
      ),
    ).toBe('TLS (CA file /ca.pem, client certificate /c.pem, certificates NOT verified)');
  });
});
