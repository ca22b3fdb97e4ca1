import { endpointsLine, ignoredEndpointsNote } from '../../../../cli/kit/endpoints-note';
import { configSources, loadConfig, type ConfigSource } from '../../../../core/config';

describe('endpointsLine: which endpoints a command uses, and where each came from', () => {
  const sourcesOf = (entries: Array<[string, ConfigSource]>) => new Map(entries);

  it('AWS defaults name the region and its source; S3 only for an s3:// archive', () => {
    const config = loadConfig({ env: { TTLSTREAM_REGION: 'eu-west-3' }, useStackEndpoints: false });
    const sources = configSources({ env: { TTLSTREAM_REGION: 'eu-west-3' }, useStackEndpoints: false });
    expect(endpointsLine(config, sources, {}, '/w')).toBe(
      'endpoints: DynamoDB AWS default for region eu-west-3 (region: TTLSTREAM_REGION); Kafka 127.0.0.1:19092 (default)',
    );
    const s3 = loadConfig({ env: { TTLSTREAM_ARCHIVE_URL: 's3://b/p' }, useStackEndpoints: false });
    expect(endpointsLine(s3, new Map(), {}, '/w')).toBe(
      'endpoints: DynamoDB AWS default for region us-east-1 (region: default); Kafka 127.0.0.1:19092 (default); S3 AWS default for region us-east-1 (region: default)',
    );
  });

  it('names the schema registry when one is set, credentials redacted', () => {
    const env = { TTLSTREAM_SCHEMAS_REGISTRY_URL: 'https://u:secret@registry:8081/apis/ccompat/v7' };
    const config = loadConfig({ env, useStackEndpoints: false });
    const line = endpointsLine(config, configSources({ env, useStackEndpoints: false }), {}, '/w');
    expect(line).toMatch(
      /; schema registry https:\/\/\[redacted\]@registry:8081\/apis\/ccompat\/v7 \(TTLSTREAM_SCHEMAS_REGISTRY_URL\)$/,
    );
    expect(line).not.toContain('secret');
  });

  it('names the flag, the variable, the config file or the local stack (path relative to the working folder), credentials redacted', () => {
    const config = loadConfig({
      env: {},
      useStackEndpoints: false,
      overrides: {
        dynamodb: { endpoint: 'http://user:secret@ddb:8000' },
        kafka: { brokers: ['k1:9092', 'k2:9092'] },
        archive: { url: 's3://b', s3Endpoint: 'http://s3:9000' },
      },
    });
    const choice = { used: { path: '/w/.ttlstream/endpoints.json', by: 'TTLSTREAM_LOCAL_STACK' } };
    expect(
      endpointsLine(
        config,
        sourcesOf([
          ['dynamodb.endpoint', 'flag'],
          ['kafka.brokers', 'endpoints file'],
          ['archive.s3Endpoint', 'config file'],
        ]),
        choice,
        '/w',
      ),
    ).toBe(
      'endpoints: DynamoDB http://[redacted]@ddb:8000 (--endpoint-url); Kafka k1:9092,k2:9092 (local stack .ttlstream/endpoints.json, TTLSTREAM_LOCAL_STACK); S3 http://s3:9000 (config file)',
    );
    expect(endpointsLine(config, sourcesOf([['dynamodb', 'env']]), choice, '/elsewhere')).toMatch(
      /^endpoints: DynamoDB http:\/\/\[redacted\]@ddb:8000 \(TTLSTREAM_DYNAMODB_ENDPOINT\); Kafka k1:9092,k2:9092 \(default\)/,
    );
  });
});

describe('ignoredEndpointsNote', () => {
  it('says where the unused file is and how to use it; nothing when there is none', () => {
    expect(ignoredEndpointsNote({ ignored: '/w/.ttlstream/endpoints.json' }, '/w')).toBe(
      'note: found .ttlstream/endpoints.json from a local stack; not used because no local stack is configured; set TTLSTREAM_LOCAL_STACK=.ttlstream (or --local-stack .ttlstream) to use it',
    );
    expect(ignoredEndpointsNote({}, '/w')).toBeUndefined();
    expect(
      ignoredEndpointsNote({ used: { path: '/w/x/endpoints.json', by: '--local-stack' } }, '/w'),
    ).toBeUndefined();
  });
});
