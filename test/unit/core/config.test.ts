import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  chooseStackEndpoints,
  configSources,
  envName,
  loadConfig,
  parseConfig,
  settingsTable,
  stackEndpointsPath,
} from '../../../core/config';
import { ConfigError } from '../../../core/errors';
import { archiverOptionsFrom } from '../../../archiver/options';
import { configFromEnv } from '../../support/config';

const thrown = (f: () => unknown): Error => {
  try {
    f();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a throw');
};

describe('defaults', () => {
  it('fills every setting from the schema when nothing is given', () => {
    const c = configFromEnv();
    expect(c).toEqual(parseConfig({}));
    expect(c.region).toBe('us-east-1');
    expect(c.dynamodb).toEqual({ maxAttempts: 6, connectionTimeoutMs: 3000, requestTimeoutMs: 10_000 });
    expect(c.kafka).toMatchObject({
      brokers: ['127.0.0.1:19092'],
      clientId: 'ttlstream',
      ssl: false,
      connectionTimeoutMs: 3000,
      requestTimeoutMs: 30000,
    });
    expect(c.kafka.sasl).toBeUndefined();
    expect(c.topics).toEqual({
      naming: 'shared',
      shared: 'ttlstream.remove',
      perTablePrefix: 'ttlstream.remove.',
      deadLetter: 'ttlstream.dead-letter',
      partitions: 6,
      replicationFactor: 1,
      minInsyncReplicas: 1,
      retentionMs: 86_400_000,
      encoding: 'avro',
    });
    expect(c.tables).toEqual({ control: 'ttlstream_control', marks: 'ttlstream_marks' });
    expect(c.archive).toMatchObject({
      url: 'file:///tmp/ttlstream-archive',
      s3ForcePathStyle: true,
      s3IdleTimeoutMs: 30_000,
      rollBytes: 64 * 1024 * 1024,
      rollMs: 60_000,
    });
    expect(c.api).toMatchObject({
      host: '127.0.0.1',
      port: 8080,
      tokens: [],
      awsCredentials: [],
      openReads: false,
      hosts: [],
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      idleTimeoutMs: 60_000,
      maxConnections: 256,
    });
    expect(c.scanner).toMatchObject({ totalSegments: 8, leaseMs: 10_000, pageSize: 500 });
    expect(c.producer).toMatchObject({ concurrency: 32, batchSize: 250, shards: 16, dryRun: false });
    expect(c.guard).toMatchObject({ maxExpiredFraction: 0.5, minItemsForFraction: 1000 });
    expect(c.metrics).toEqual({});
    expect(c.log.level).toBe('info');
  });
});

describe('environment variables', () => {
  it('derive their names from the setting path, camelCase split at capitals', () => {
    expect(envName(['scanner', 'totalSegments'])).toBe('TTLSTREAM_SCANNER_TOTAL_SEGMENTS');
    expect(envName(['archive', 's3Endpoint'])).toBe('TTLSTREAM_ARCHIVE_S3_ENDPOINT');
    expect(envName(['region'])).toBe('TTLSTREAM_REGION');
    const names = settingsTable().map((s) => s.env);
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) expect(n).toMatch(/^TTLSTREAM_[A-Z0-9_]+$/);
  });

  it('parse integers and decimals', () => {
    const c = configFromEnv({
      TTLSTREAM_SCANNER_TOTAL_SEGMENTS: '16',
      TTLSTREAM_GUARD_MAX_EXPIRED_FRACTION: '0.25',
      TTLSTREAM_TOPICS_RETENTION_MS: '3600000',
    });
    expect(c.scanner.totalSegments).toBe(16);
    expect(c.guard.maxExpiredFraction).toBe(0.25);
    expect(c.topics.retentionMs).toBe(3_600_000);
  });

  it.each([
    ['true', true],
    ['1', true],
    ['false', false],
    ['0', false],
  ])('parse the boolean %s', (raw, value) => {
    expect(configFromEnv({ TTLSTREAM_PRODUCER_DRY_RUN: raw }).producer.dryRun).toBe(value);
  });

  it('parse comma-separated lists, trimming blanks', () => {
    expect(configFromEnv({ TTLSTREAM_KAFKA_BROKERS: 'k1:9092, k2:9092,,k3:9093 ' }).kafka.brokers).toEqual([
      'k1:9092',
      'k2:9092',
      'k3:9093',
    ]);
    expect(configFromEnv({ TTLSTREAM_API_TOKENS: 'aaaaaaaaaaaaaaaa,bbbbbbbbbbbbbbbb' }).api.tokens).toEqual([
      'aaaaaaaaaaaaaaaa',
      'bbbbbbbbbbbbbbbb',
    ]);
  });

  it('parse JSON arrays of objects', () => {
    const creds = [
      { accessKeyId: 'AKIA1', secretAccessKey: 's1' },
      { accessKeyId: 'AKIA2', secretAccessKey: 's2' },
    ];
    expect(
      configFromEnv({ TTLSTREAM_API_AWS_CREDENTIALS: JSON.stringify(creds) }).api.awsCredentials,
    ).toEqual(creds);
  });

  it('set nested optional objects leaf by leaf', () => {
    const c = configFromEnv({
      TTLSTREAM_KAFKA_SSL: 'true',
      TTLSTREAM_KAFKA_SASL_MECHANISM: 'scram-sha-512',
      TTLSTREAM_KAFKA_SASL_USERNAME: 'u',
      TTLSTREAM_KAFKA_SASL_PASSWORD: 'p',
    });
    expect(c.kafka.sasl).toEqual({ mechanism: 'scram-sha-512', username: 'u', password: 'p' });
  });

  it.each([
    [
      'TTLSTREAM_SCANNER_TOTAL_SEGMENTS',
      'many',
      /TTLSTREAM_SCANNER_TOTAL_SEGMENTS: expected a number, got "many"/,
    ],
    ['TTLSTREAM_SCANNER_TOTAL_SEGMENTS', '', /TTLSTREAM_SCANNER_TOTAL_SEGMENTS: expected a number/],
    [
      'TTLSTREAM_GUARD_MAX_EXPIRED_FRACTION',
      'NaN',
      /TTLSTREAM_GUARD_MAX_EXPIRED_FRACTION: expected a number/,
    ],
    ['TTLSTREAM_PRODUCER_DRY_RUN', 'yes', /TTLSTREAM_PRODUCER_DRY_RUN: expected true or false, got "yes"/],
    ['TTLSTREAM_API_AWS_CREDENTIALS', '[{oops', /TTLSTREAM_API_AWS_CREDENTIALS: expected a JSON array/],
  ])('refuse %s=%j with a ConfigError naming the variable', (name, raw, message) => {
    const err = thrown(() => configFromEnv({ [name]: raw }));
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toMatch(message);
  });

  it('ignore variables that are not settings', () => {
    expect(configFromEnv({ TTLSTREAM_STACK_KAFKA_PORT: '29092', PATH: '/bin' })).toEqual(parseConfig({}));
  });

  it('carry the archiver tuning knobs in the archive section, unset by default', () => {
    const unset = configFromEnv().archive;
    expect([unset.sessionTimeoutMs, unset.monitorIntervalMs, unset.rebalanceTimeoutMs]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    const c = configFromEnv({
      TTLSTREAM_ARCHIVE_SESSION_TIMEOUT_MS: '6000',
      TTLSTREAM_ARCHIVE_MONITOR_INTERVAL_MS: '500',
      TTLSTREAM_ARCHIVE_REBALANCE_TIMEOUT_MS: '10000',
    });
    expect(c.archive).toMatchObject({
      sessionTimeoutMs: 6000,
      monitorIntervalMs: 500,
      rebalanceTimeoutMs: 10_000,
    });
    // What the archiver is started with, by its own entry point and by `ttlstream run`.
    const knobs = (o: ReturnType<typeof archiverOptionsFrom>) => ({
      monitorIntervalMs: o.monitorIntervalMs,
      topicRefreshMs: o.topicRefreshMs,
      sessionTimeoutMs: o.sessionTimeoutMs,
      heartbeatIntervalMs: o.heartbeatIntervalMs,
      rebalanceTimeoutMs: o.rebalanceTimeoutMs,
    });
    expect(knobs(archiverOptionsFrom(c))).toEqual({
      monitorIntervalMs: 500,
      topicRefreshMs: 500,
      sessionTimeoutMs: 6000,
      heartbeatIntervalMs: 1200,
      rebalanceTimeoutMs: 10_000,
    });
    // Unset, the archiver's own defaults; a test's tuning over the configuration.
    expect(knobs(archiverOptionsFrom(configFromEnv()))).toEqual({
      monitorIntervalMs: 15_000,
      topicRefreshMs: 30_000,
      sessionTimeoutMs: 30_000,
      heartbeatIntervalMs: 3_000,
      rebalanceTimeoutMs: 60_000,
    });
    expect(knobs(archiverOptionsFrom(c, { monitorIntervalMs: 300, rebalanceTimeoutMs: 7000 }))).toEqual({
      monitorIntervalMs: 300,
      topicRefreshMs: 500,
      sessionTimeoutMs: 6000,
      heartbeatIntervalMs: 1200,
      rebalanceTimeoutMs: 7000,
    });
    // A name that never was a setting is a typo, not a silently ignored variable.
    const err = thrown(() => configFromEnv({ TTLSTREAM_ARCHIVER_MONITOR_MS: '500' }));
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toMatch(/TTLSTREAM_ARCHIVER_MONITOR_MS: not a ttlstream setting/);
  });
});

describe('settings under their old names (the archiver section, now archive), until 0.3.0', () => {
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ttlstream-renamed-'));
  });

  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  const load = (env: NodeJS.ProcessEnv, file?: object) => {
    const warnings: string[] = [];
    const path = join(dir, 'config.json');
    if (file) writeFileSync(path, JSON.stringify(file));
    const options = {
      env,
      useStackEndpoints: false,
      onWarning: (m: string) => void warnings.push(m),
      ...(file ? { file: path } : {}),
    };
    return { config: loadConfig(options), sources: configSources(options), warnings, path };
  };

  it('takes TTLSTREAM_ARCHIVER_* as the archive settings, warning with the new variable', () => {
    const { config, sources, warnings } = load({
      TTLSTREAM_ARCHIVER_SESSION_TIMEOUT_MS: '6000',
      TTLSTREAM_ARCHIVER_MONITOR_INTERVAL_MS: '500',
      TTLSTREAM_ARCHIVER_REBALANCE_TIMEOUT_MS: '10000',
    });
    expect(config.archive).toMatchObject({
      sessionTimeoutMs: 6000,
      monitorIntervalMs: 500,
      rebalanceTimeoutMs: 10_000,
    });
    expect(config).not.toHaveProperty('archiver');
    expect(sources.get('archive.sessionTimeoutMs')).toBe('env');
    expect(warnings).toContain(
      'TTLSTREAM_ARCHIVER_SESSION_TIMEOUT_MS is now TTLSTREAM_ARCHIVE_SESSION_TIMEOUT_MS (archive.sessionTimeoutMs); the old name is refused from 0.3.0: rename it',
    );
    expect(
      warnings.filter((w) => w.startsWith('TTLSTREAM_ARCHIVER_MONITOR_INTERVAL_MS is now')),
    ).toHaveLength(
      2, // once for the configuration, once for its sources
    );
  });

  it('takes the archiver section of a config file as archive settings, warning with the file and the new name', () => {
    const { config, sources, warnings, path } = load({}, { archiver: { sessionTimeoutMs: 7000 } });
    expect(config.archive.sessionTimeoutMs).toBe(7000);
    expect(sources.get('archive.sessionTimeoutMs')).toBe('config file');
    expect(warnings[0]).toBe(
      `archiver.sessionTimeoutMs (config file ${path}) is now archive.sessionTimeoutMs (TTLSTREAM_ARCHIVE_SESSION_TIMEOUT_MS); the old name is refused from 0.3.0: rename it`,
    );
  });

  it('keeps the precedence of the layers: a new name in the environment wins over the old one in the file', () => {
    const { config } = load(
      { TTLSTREAM_ARCHIVE_SESSION_TIMEOUT_MS: '9000' },
      { archiver: { sessionTimeoutMs: 7000 }, archive: { rollMs: 1000 } },
    );
    expect(config.archive).toMatchObject({ sessionTimeoutMs: 9000, rollMs: 1000 });
  });

  it.each([
    [
      'both names in the environment',
      { TTLSTREAM_ARCHIVER_SESSION_TIMEOUT_MS: '6000', TTLSTREAM_ARCHIVE_SESSION_TIMEOUT_MS: '6000' },
      undefined,
      /TTLSTREAM_ARCHIVER_SESSION_TIMEOUT_MS and TTLSTREAM_ARCHIVE_SESSION_TIMEOUT_MS are both set/,
    ],
    [
      'both names in one file',
      {},
      { archiver: { sessionTimeoutMs: 6000 }, archive: { sessionTimeoutMs: 6000 } },
      /archiver.sessionTimeoutMs and archive.sessionTimeoutMs are both set \(config file .*\): archiver.sessionTimeoutMs is the old name of archive.sessionTimeoutMs; remove it/,
    ],
    [
      'a key the old section never had',
      {},
      { archiver: { groupId: 'g' } },
      /archiver.groupId \(TTLSTREAM_ARCHIVER_GROUP_ID\): not a ttlstream setting/,
    ],
    [
      'an old section that is not an object',
      {},
      { archiver: 5 },
      /archiver \(config file .*\): expected an object/,
    ],
  ])('refuses %s with a ConfigError naming the setting', (_what, env, file, message) => {
    const err = thrown(() => load(env, file));
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toMatch(message);
  });

  it('parseConfig takes the old section too, as a DeprecationWarning unless told where to warn', () => {
    const warnings: string[] = [];
    const told = parseConfig(
      { archiver: { monitorIntervalMs: 500 } },
      { onWarning: (m) => warnings.push(m) },
    );
    expect(told.archive.monitorIntervalMs).toBe(500);
    expect(warnings).toEqual([
      'archiver.monitorIntervalMs (configuration) is now archive.monitorIntervalMs (TTLSTREAM_ARCHIVE_MONITOR_INTERVAL_MS); the old name is refused from 0.3.0: rename it',
    ]);
    const emit = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      expect(parseConfig({ archiver: { monitorIntervalMs: 500 } }).archive.monitorIntervalMs).toBe(500);
      expect(emit).toHaveBeenCalledWith(warnings[0], {
        type: 'DeprecationWarning',
        code: 'TTLSTREAM_RENAMED_SETTING',
      });
    } finally {
      emit.mockRestore();
    }
  });
});

describe('chooseStackEndpoints', () => {
  const files =
    (...paths: string[]) =>
    (p: string) =>
      paths.includes(p);

  it('uses only an explicitly configured stack; reports a file in ./.ttlstream (or TTLSTREAM_STATE_DIR) as ignored', () => {
    expect(
      chooseStackEndpoints({ env: {}, cwd: '/w', exists: files('/w/.ttlstream/endpoints.json') }),
    ).toEqual({
      ignored: '/w/.ttlstream/endpoints.json',
    });
    expect(
      chooseStackEndpoints({
        env: { TTLSTREAM_STATE_DIR: '/s' },
        cwd: '/w',
        exists: files('/s/endpoints.json'),
      }),
    ).toEqual({ ignored: '/s/endpoints.json' });
    expect(chooseStackEndpoints({ env: {}, cwd: '/w', exists: files() })).toEqual({});
    expect(
      chooseStackEndpoints({
        env: { TTLSTREAM_LOCAL_STACK: '.ttlstream' },
        cwd: '/w',
        exists: files('/w/.ttlstream/endpoints.json'),
      }),
    ).toEqual({ used: { path: '/w/.ttlstream/endpoints.json', by: 'TTLSTREAM_LOCAL_STACK' } });
    expect(
      chooseStackEndpoints({
        env: { TTLSTREAM_LOCAL_STACK: '' },
        cwd: '/w',
        exists: files('/w/.ttlstream/endpoints.json'),
      }),
    ).toEqual({ ignored: '/w/.ttlstream/endpoints.json' });
    expect(
      chooseStackEndpoints({ localStack: '/s', env: {}, cwd: '/w', exists: files('/s/endpoints.json') }),
    ).toEqual({ used: { path: '/s/endpoints.json', by: '--local-stack' } });
  });
});

describe('precedence: defaults < stack endpoints file < config file < env < overrides', () => {
  let dir: string;
  const savedStateDir = process.env.TTLSTREAM_STATE_DIR;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ttlstream-config-'));
    process.env.TTLSTREAM_STATE_DIR = dir;
  });

  afterEach(() => {
    if (savedStateDir === undefined) delete process.env.TTLSTREAM_STATE_DIR;
    else process.env.TTLSTREAM_STATE_DIR = savedStateDir;
    rmSync(dir, { recursive: true, force: true });
  });

  const writeJson = (name: string, value: unknown): string => {
    const path = join(dir, name);
    writeFileSync(path, JSON.stringify(value));
    return path;
  };

  it('lets each layer override the one below, setting by setting', () => {
    expect(stackEndpointsPath()).toBe(join(dir, 'endpoints.json'));
    writeJson('endpoints.json', {
      kafka: { brokers: ['stack:1'] },
      dynamodb: { endpoint: 'http://stack:2' },
      archive: { s3Endpoint: 'http://stack:3' },
    });
    const file = writeJson('config.json', {
      kafka: { brokers: ['file:1'], clientId: 'from-file' },
      scanner: { pageSize: 11 },
      region: 'eu-west-1',
    });
    const env = {
      TTLSTREAM_LOCAL_STACK: dir,
      TTLSTREAM_KAFKA_CLIENT_ID: 'from-env',
      TTLSTREAM_SCANNER_PAGE_SIZE: '22',
      TTLSTREAM_REGION: 'eu-north-1',
    };
    const c = loadConfig({ env, file, overrides: { scanner: { pageSize: 33 } } });

    expect(c.dynamodb.endpoint).toBe('http://stack:2'); // stack file only
    expect(c.archive.s3Endpoint).toBe('http://stack:3');
    expect(c.kafka.brokers).toEqual(['file:1']); // file over stack file
    expect(c.kafka.clientId).toBe('from-env'); // env over file
    expect(c.region).toBe('eu-north-1');
    expect(c.scanner.pageSize).toBe(33); // overrides over env
    expect(c.scanner.totalSegments).toBe(8); // untouched default beside overridden siblings
  });

  it('reads the config file named by TTLSTREAM_CONFIG', () => {
    const file = writeJson('c.json', { producer: { batchSize: 7 } });
    expect(loadConfig({ env: { TTLSTREAM_CONFIG: file }, useStackEndpoints: false }).producer.batchSize).toBe(
      7,
    );
  });

  it('uses the stack endpoints file only when a local stack is configured (TTLSTREAM_LOCAL_STACK or --local-stack)', () => {
    writeJson('endpoints.json', { dynamodb: { endpoint: 'http://stack:2' } });
    // The file lies in the working folder's .ttlstream and in TTLSTREAM_STATE_DIR: neither is enough.
    mkdirSync(join(dir, '.ttlstream'));
    writeFileSync(
      join(dir, '.ttlstream', 'endpoints.json'),
      JSON.stringify({ dynamodb: { endpoint: 'http://cwd:2' } }),
    );
    expect(loadConfig({ env: {}, cwd: dir }).dynamodb.endpoint).toBeUndefined();
    expect(loadConfig({ env: { TTLSTREAM_STATE_DIR: dir }, cwd: dir }).dynamodb.endpoint).toBeUndefined();
    expect(loadConfig({ env: { TTLSTREAM_LOCAL_STACK: dir } }).dynamodb.endpoint).toBe('http://stack:2');
    // Relative to the working folder given; the flag wins over the variable.
    expect(loadConfig({ env: { TTLSTREAM_LOCAL_STACK: '.ttlstream' }, cwd: dir }).dynamodb.endpoint).toBe(
      'http://cwd:2',
    );
    expect(
      loadConfig({ env: { TTLSTREAM_LOCAL_STACK: dir }, localStack: '.ttlstream', cwd: dir }).dynamodb
        .endpoint,
    ).toBe('http://cwd:2');
    expect(
      loadConfig({ env: { TTLSTREAM_LOCAL_STACK: dir }, useStackEndpoints: false }).dynamodb.endpoint,
    ).toBeUndefined();
    expect(configSources({ env: { TTLSTREAM_LOCAL_STACK: dir } }).get('dynamodb.endpoint')).toBe(
      'endpoints file',
    );
  });

  it('takes from the stack endpoints file the sections it has settings for (not the schema registry)', () => {
    writeJson('endpoints.json', {
      dynamodb: { endpoint: 'http://stack:2' },
      registry: { url: 'http://stack:4/apis/ccompat/v7' },
    });
    const env = { TTLSTREAM_LOCAL_STACK: dir };
    expect(loadConfig({ env }).dynamodb.endpoint).toBe('http://stack:2');
    expect(configSources({ env }).has('registry.url')).toBe(false);
    // A section ttlstream has is still checked key by key.
    writeJson('endpoints.json', { dynamodb: { endpoint: 'http://stack:2', port: 2 } });
    expect(() => loadConfig({ env })).toThrow(
      /^dynamodb\.port \(TTLSTREAM_DYNAMODB_PORT\): not a ttlstream setting/,
    );
  });

  it('a configured local stack without its endpoints file is an error, never a quiet fall-back to AWS', () => {
    const empty = join(dir, 'empty');
    mkdirSync(empty);
    const err = thrown(() => loadConfig({ env: { TTLSTREAM_LOCAL_STACK: empty } }));
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toBe(
      `TTLSTREAM_LOCAL_STACK ${empty}: no local stack there (${join(empty, 'endpoints.json')} not found): start it with \`npm run infra:up\`, or unset TTLSTREAM_LOCAL_STACK to use the configured endpoints`,
    );
    expect(() => loadConfig({ env: {}, localStack: empty })).toThrow(/^--local-stack /);
  });

  it('refuses an unreadable or non-object config file, naming it', () => {
    const missing = join(dir, 'nope.json');
    expect(() => configFromEnv({}, { file: missing })).toThrow(ConfigError);
    expect(() => configFromEnv({}, { file: missing })).toThrow(missing);
    const broken = join(dir, 'broken.json');
    writeFileSync(broken, '{"kafka": ');
    expect(() => configFromEnv({}, { file: broken })).toThrow(`config file ${broken}`);
    const list = writeJson('list.json', [1, 2]);
    expect(() => configFromEnv({}, { file: list })).toThrow(/not a JSON object/);
  });

  it('says where a config file is not valid JSON, never what is there (it can be a secret)', () => {
    const broken = join(dir, 'secret.json');
    writeFileSync(broken, '{\n  "api": { "tokens": ["tok-SECRET-0123456789abcdef"] x }\n}');
    expect(() => configFromEnv({}, { file: broken })).toThrow(
      `config file ${broken}: not valid JSON at line 2, column 54`,
    );
    let message = '';
    try {
      configFromEnv({}, { file: broken });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).not.toMatch(/SECRET|0123456789|tokens/);
    const cut = join(dir, 'cut.json');
    writeFileSync(cut, '{"api": {"tokens": ["tok-SECRET-01234');
    expect(() => configFromEnv({}, { file: cut })).toThrow(/not valid JSON at line 1, column \d+$/);
  });
});

describe('invalid values', () => {
  it.each<[string, () => unknown, string]>([
    [
      'out of range from env',
      () => configFromEnv({ TTLSTREAM_API_PORT: '70000' }),
      'api.port (TTLSTREAM_API_PORT)',
    ],
    [
      'below minimum from overrides',
      () => configFromEnv({}, { overrides: { scanner: { totalSegments: 0 } } }),
      'scanner.totalSegments (TTLSTREAM_SCANNER_TOTAL_SEGMENTS)',
    ],
    [
      'not in the enum',
      () => configFromEnv({ TTLSTREAM_TOPICS_NAMING: 'by-table' }),
      'topics.naming (TTLSTREAM_TOPICS_NAMING)',
    ],
    [
      'bad URL',
      () => configFromEnv({ TTLSTREAM_DYNAMODB_ENDPOINT: 'not a url' }),
      'dynamodb.endpoint (TTLSTREAM_DYNAMODB_ENDPOINT)',
    ],
    [
      'bad archive URL',
      () => configFromEnv({ TTLSTREAM_ARCHIVE_URL: 'ftp://x' }),
      'archive.url (TTLSTREAM_ARCHIVE_URL): expected file:///path or s3://bucket/prefix',
    ],
    [
      'an S3 idle timeout below a second',
      () => configFromEnv({ TTLSTREAM_ARCHIVE_S3_IDLE_TIMEOUT_MS: '500' }),
      'archive.s3IdleTimeoutMs (TTLSTREAM_ARCHIVE_S3_IDLE_TIMEOUT_MS)',
    ],
    [
      'a bad list element names the list variable',
      () => configFromEnv({ TTLSTREAM_KAFKA_BROKERS: 'k1:9092,nohostport' }),
      'kafka.brokers.1 (TTLSTREAM_KAFKA_BROKERS): expected host:port',
    ],
    [
      'a short token',
      () => configFromEnv({ TTLSTREAM_API_TOKENS: 'short' }),
      'api.tokens.0 (TTLSTREAM_API_TOKENS): tokens must be at least 16 characters',
    ],
    [
      'a bad JSON list element',
      () => configFromEnv({ TTLSTREAM_API_AWS_CREDENTIALS: '[{"accessKeyId":"a"}]' }),
      'api.awsCredentials.0.secretAccessKey (TTLSTREAM_API_AWS_CREDENTIALS)',
    ],
    [
      'an incomplete SASL block',
      () => configFromEnv({ TTLSTREAM_KAFKA_SASL_MECHANISM: 'plain' }),
      'kafka.sasl.username (TTLSTREAM_KAFKA_SASL_USERNAME)',
    ],
  ])('%s: ConfigError naming the setting and its variable', (_label, run, message) => {
    const err = thrown(run);
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toContain(message);
  });

  it('refuses an unknown top-level section', () => {
    const err = thrown(() => parseConfig({ kafak: { brokers: ['x:1'] } }));
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toMatch(/kafak/);
  });
});
