import { parseConfig } from '../../../../core/config';
import { REDACTED, flattenConfig, redactSecrets } from '../../../../cli/kit/redact';

describe('redactSecrets', () => {
  it('hides every secret in the configuration and keeps the rest', () => {
    const config = parseConfig({
      dynamodb: { accessKeyId: 'AKIDDYNAMO', secretAccessKey: 'dynamo-secret' },
      kafka: {
        ssl: {
          caFile: '/etc/kafka/ca.pem',
          certFile: '/c.pem',
          keyFile: '/k.pem',
          keyPassphrase: 'key-passphrase',
        },
        sasl: { mechanism: 'plain', username: 'svc', password: 'kafka-password' },
      },
      archive: { s3AccessKeyId: 'AKIDS3', s3SecretAccessKey: 's3-secret' },
      api: {
        tokens: ['0123456789abcdef0123'],
        awsCredentials: [{ accessKeyId: 'AKIDAPI', secretAccessKey: 'api-secret' }],
      },
    });
    const out = redactSecrets(config);
    const text = JSON.stringify(out);
    for (const secret of [
      'dynamo-secret',
      'kafka-password',
      'key-passphrase',
      's3-secret',
      '0123456789abcdef0123',
      'api-secret',
    ]) {
      expect(text).not.toContain(secret);
    }
    expect(out.api.tokens).toEqual([REDACTED]);
    expect(out.api.awsCredentials).toEqual([{ accessKeyId: 'AKIDAPI', secretAccessKey: REDACTED }]);
    expect(out.kafka.sasl).toEqual({ mechanism: 'plain', username: 'svc', password: REDACTED });
    expect(out.dynamodb.accessKeyId).toBe('AKIDDYNAMO');
    expect(config.dynamodb.secretAccessKey).toBe('dynamo-secret'); // the input is not modified
  });

  it('hides credentials inside URLs, under any key', () => {
    const config = parseConfig({
      dynamodb: { endpoint: 'http://ddb-user:ddb-pass@dynamo.internal:8000' },
      archive: { s3Endpoint: 'https://s3-pass@s3.internal/', url: 's3://bucket/prefix' },
    });
    const out = redactSecrets(config);
    expect(out.dynamodb.endpoint).toBe(`http://${REDACTED}@dynamo.internal:8000`);
    expect(out.archive.s3Endpoint).toBe(`https://${REDACTED}@s3.internal/`);
    expect(out.archive.url).toBe('s3://bucket/prefix');
    expect(JSON.stringify(out)).not.toMatch(/ddb-pass|ddb-user|s3-pass/);
  });

  it('flattens to dotted paths', () => {
    expect(flattenConfig({ a: { b: 1, c: ['x'] }, d: 'e' })).toEqual([
      ['a.b', '1'],
      ['a.c', '["x"]'],
      ['d', '"e"'],
    ]);
  });
});
