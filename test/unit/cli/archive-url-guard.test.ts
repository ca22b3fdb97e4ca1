import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireArchiveUrl } from '../../../core/config';
import { ConfigError } from '../../../core/errors';
import { cli, QUIET_OFFLINE } from '../../support/cli';

/**
 * `ttlstream run` with the archiver role refuses the built-in archive.url (file:///tmp/ttlstream-archive, an emptyDir
 * in a pod) unless archive.url is set or a local stack is configured: one line naming the setting, exit 2, before any
 * service is contacted.
 */
const REFUSAL =
  'ttlstream: archive.url (TTLSTREAM_ARCHIVE_URL) is not set: the archiver will not write to the default file:///tmp/ttlstream-archive outside a local stack (a folder that dies with its container while the offsets are committed); set it to s3://bucket/prefix, or to a file:/// folder on a volume that outlives the process\n';

let dir: string;
/** A "broker" that closes every connection at its first bytes: a run that gets past the guard fails on it, fast. */
let closer: Server;
let broker: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ttlstream-guard-'));
  closer = createServer((s) => {
    s.on('error', () => undefined);
    s.on('data', () => s.destroy());
  });
  await new Promise<void>((r) => closer.listen(0, '127.0.0.1', () => r()));
  const a = closer.address();
  broker = `127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
});
afterAll(async () => {
  await new Promise((r) => closer.close(r));
  rmSync(dir, { recursive: true, force: true });
});

/** What `run` says when it got past the guard: the TLS check of the stand-in broker. */
const pastTheGuard = (): RegExp =>
  new RegExp(`^ttlstream: Kafka broker ${broker.replace(/\./g, '\\.')} does not answer TLS`);

describe('run --roles archiver: the built-in archive.url outside a local stack', () => {
  it('is refused with one line naming archive.url, exit 2, before Kafka is tried', async () => {
    for (const roles of ['archiver', 'scanner,producer,archiver']) {
      // The broker would be waited for (down is not a setting): only the guard makes this end at once.
      const r = await cli(['run', '--roles', roles], {
        ...QUIET_OFFLINE,
        TTLSTREAM_KAFKA_BROKERS: '127.0.0.1:9',
      });
      expect({ roles, code: r.code, stderr: r.stderr }).toEqual({ roles, code: 2, stderr: REFUSAL });
    }
  }, 30_000);

  it.each([
    ['the environment', { TTLSTREAM_ARCHIVE_URL: 's3://archive/ttl' }, []],
    [
      'the environment, even to the default value',
      { TTLSTREAM_ARCHIVE_URL: 'file:///tmp/ttlstream-archive' },
      [],
    ],
    ['a config file', {}, ['--config', 'CONFIG']],
  ])(
    'set by %s: the archiver starts (here: reaches the Kafka check)',
    async (_by, env, args) => {
      const config = join(dir, 'config.json');
      writeFileSync(config, JSON.stringify({ archive: { url: 'file:///var/archive' } }));
      const r = await cli([...args.map((a) => (a === 'CONFIG' ? config : a)), 'run', '--roles', 'archiver'], {
        ...QUIET_OFFLINE,
        TTLSTREAM_KAFKA_BROKERS: broker,
        TTLSTREAM_KAFKA_SSL: 'true',
        ...env,
      });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(pastTheGuard());
    },
    30_000,
  );

  it('inside a configured local stack the default is the scratch archive it always was', async () => {
    writeFileSync(join(dir, 'endpoints.json'), JSON.stringify({ kafka: { brokers: [broker] } }));
    const r = await cli(['run', '--roles', 'archiver'], {
      ...QUIET_OFFLINE,
      TTLSTREAM_LOCAL_STACK: dir,
      TTLSTREAM_KAFKA_SSL: 'true',
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(pastTheGuard());
  }, 30_000);

  it('roles without the archiver are not concerned', async () => {
    const r = await cli(['run', '--roles', 'scanner'], {
      ...QUIET_OFFLINE,
      TTLSTREAM_KAFKA_BROKERS: broker,
      TTLSTREAM_KAFKA_SSL: 'true',
    });
    expect(r.stderr).toMatch(pastTheGuard());
  }, 30_000);

  it('requireArchiveUrl: "set" is any layer above the schema default, "local stack" one configured', () => {
    const refused = (options: Parameters<typeof requireArchiveUrl>[0]): boolean => {
      try {
        requireArchiveUrl({ cwd: dir, ...options });
        return false;
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return true;
      }
    };
    expect(refused({ env: {} })).toBe(true);
    // The local stack's endpoints file names the S3 endpoint, not the archive: still the default, still fine there.
    writeFileSync(
      join(dir, 'endpoints.json'),
      JSON.stringify({ archive: { s3Endpoint: 'http://127.0.0.1:9' } }),
    );
    expect(refused({ env: { TTLSTREAM_LOCAL_STACK: dir } })).toBe(false);
    expect(refused({ env: {}, localStack: dir })).toBe(false);
    // A local stack the unit tests are told to ignore does not count.
    expect(refused({ env: { TTLSTREAM_LOCAL_STACK: dir }, useStackEndpoints: false })).toBe(true);
    expect(refused({ env: {}, overrides: { archive: { url: 'file:///var/archive' } } })).toBe(false);
    expect(refused({ env: { TTLSTREAM_ARCHIVE_URL: 's3://b/p' } })).toBe(false);
    // Another archive setting is not the archive's place.
    expect(refused({ env: { TTLSTREAM_ARCHIVE_ROLL_MS: '1000' } })).toBe(true);
  });
});
