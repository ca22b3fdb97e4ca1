import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, parseConfig, settingsTable } from '../../../core/config';
import { ConfigError } from '../../../core/errors';
import { isServiceLinkVariable, serviceOfLink } from '../../../core/service-links';
import { cli } from '../../support/cli';
import { deployServices, serviceLinkEnv, type ServiceForLinks } from '../../support/k8s-service-links';

/** loadConfig of exactly `env` (no local stack), with the warnings it gave. */
function load(
  env: NodeJS.ProcessEnv,
  file?: string,
): { config: ReturnType<typeof loadConfig>; warnings: string[] } {
  const warnings: string[] = [];
  const config = loadConfig({
    env,
    useStackEndpoints: false,
    onWarning: (w) => warnings.push(w),
    ...(file !== undefined ? { file } : {}),
  });
  return { config, warnings };
}

function refusal(env: NodeJS.ProcessEnv): string {
  try {
    load(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error(`expected ${JSON.stringify(env)} to be refused`);
}

/** Services a user names after the product, beside the ones deploy/k8s has. */
const PRODUCT_NAMED: ServiceForLinks[] = [
  { name: 'ttlstream', clusterIP: '10.100.1.1', ports: [{ name: 'http', port: 8080 }] },
  {
    name: 'ttlstream-metrics',
    clusterIP: '10.100.1.2',
    ports: [
      { name: 'metrics', port: 9464 },
      { name: 'api-http', port: 8080, protocol: 'TCP' },
    ],
  },
  // Dual-stack clusters hand out IPv6 cluster IPs; other protocols have links of their own.
  {
    name: 'ttlstream-v6',
    clusterIP: 'fd00:10:96::a',
    ports: [{ port: 8080 }, { name: 'dns', port: 53, protocol: 'UDP' }],
  },
  { name: 'ttlstream-sctp', clusterIP: '10.100.1.4', ports: [{ name: 'x', port: 9999, protocol: 'SCTP' }] },
];

describe('Kubernetes service links: the variables the kubelet adds for every Service of the namespace', () => {
  it('deploy/k8s has the Service the issue names: ttlstream-api, port http 8080', () => {
    expect(deployServices()).toContainEqual({
      name: 'ttlstream-api',
      clusterIP: expect.stringMatching(/^10\.100\.0\.\d+$/) as unknown,
      ports: [expect.objectContaining({ name: 'http', port: 8080 })],
    });
    // What a pod gets for it (the shapes in the Kubernetes documentation).
    expect(
      serviceLinkEnv([
        { name: 'ttlstream-api', clusterIP: '10.0.0.1', ports: [{ name: 'http', port: 8080 }] },
      ]),
    ).toEqual({
      TTLSTREAM_API_SERVICE_HOST: '10.0.0.1',
      TTLSTREAM_API_SERVICE_PORT: '8080',
      TTLSTREAM_API_SERVICE_PORT_HTTP: '8080',
      TTLSTREAM_API_PORT: 'tcp://10.0.0.1:8080',
      TTLSTREAM_API_PORT_8080_TCP: 'tcp://10.0.0.1:8080',
      TTLSTREAM_API_PORT_8080_TCP_PROTO: 'tcp',
      TTLSTREAM_API_PORT_8080_TCP_PORT: '8080',
      TTLSTREAM_API_PORT_8080_TCP_ADDR: '10.0.0.1',
    });
  });

  it('every variable of every Service in deploy/k8s and of Services named after the product is recognised', () => {
    const env = serviceLinkEnv([...deployServices(), ...PRODUCT_NAMED]);
    expect(Object.keys(env).length).toBeGreaterThan(40);
    for (const [name, value] of Object.entries(env))
      expect({ name, value, link: isServiceLinkVariable(name, value) }).toEqual({ name, value, link: true });
    expect(env['TTLSTREAM_V6_PORT']).toBe('tcp://[fd00:10:96::a]:8080');
    expect(env['TTLSTREAM_V6_PORT_53_UDP']).toBe('udp://[fd00:10:96::a]:53');
  });

  it('a pod with them all starts with the configuration it would have without them', () => {
    const links = serviceLinkEnv([...deployServices(), ...PRODUCT_NAMED]);
    const own = { TTLSTREAM_REGION: 'eu-west-1', TTLSTREAM_ARCHIVE_URL: 's3://archive/ttl' };
    const { config, warnings } = load({ ...links, ...own });
    expect(config).toEqual(load(own).config);
    // api.port and metrics.port keep their defaults; the two links on their variables are said, nothing else.
    expect(config.api.port).toBe(8080);
    expect(config.metrics.port).toBeUndefined();
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toBe(
      `TTLSTREAM_API_PORT=${links.TTLSTREAM_API_PORT as string} is the variable Kubernetes sets for the Service ttlstream-api, not a value of api.port: ignored (api.port comes from the config file or its default); set enableServiceLinks: false in the pod spec, or TTLSTREAM_API_PORT in the container's env`,
    );
    expect(warnings[1]).toMatch(
      /^TTLSTREAM_METRICS_PORT=tcp:\/\/[0-9.]+:\d+ is the variable Kubernetes sets for the Service ttlstream-metrics, not a value of metrics\.port: ignored/,
    );
  });

  it('only TTLSTREAM_API_PORT_8080_TCP set: the configuration is the default one, without a word', () => {
    const { config, warnings } = load({ TTLSTREAM_API_PORT_8080_TCP: 'tcp://10.0.0.1:8080' });
    expect(config).toEqual(parseConfig({}));
    expect(warnings).toEqual([]);
  });

  it('a real setting beside its link: the container env wins in Kubernetes, and it is parsed as the setting', () => {
    // The kubelet never overrides a variable the container sets; this is what the API pod of deploy/k8s gets.
    expect(
      load({ TTLSTREAM_API_PORT: '8081', TTLSTREAM_API_PORT_8080_TCP: 'tcp://10.0.0.1:8080' }).config.api
        .port,
    ).toBe(8081);
    expect(refusal({ TTLSTREAM_API_PORT: 'http' })).toBe('TTLSTREAM_API_PORT: expected a number, got "http"');
    expect(refusal({ TTLSTREAM_API_PORT: '70000' })).toMatch(/^api\.port \(TTLSTREAM_API_PORT\): /);
  });

  it('a link on a setting leaves the setting to the config file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ttlstream-links-'));
    try {
      const file = join(dir, 'config.json');
      writeFileSync(file, JSON.stringify({ api: { port: 9000 }, metrics: { port: 9465 } }));
      const { config, warnings } = load(
        { TTLSTREAM_API_PORT: 'tcp://10.0.0.1:8080', TTLSTREAM_METRICS_PORT: 'tcp://[fd00::1]:9464' },
        file,
      );
      expect(config.api.port).toBe(9000);
      expect(config.metrics.port).toBe(9465);
      expect(warnings).toHaveLength(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    ['a misspelt setting', { TTLSTREAM_ARCHIVE_URLL: 's3://archive/ttl' }, 'TTLSTREAM_ARCHIVE_URLL'],
    ['a misspelt port setting with a port', { TTLSTREAM_METRIC_PORT: '9464' }, 'TTLSTREAM_METRIC_PORT'],
    [
      'a *_PORT name holding a URL of no service',
      { TTLSTREAM_ARCHIVE_PORT: 'http://10.0.0.1:80' },
      'TTLSTREAM_ARCHIVE_PORT',
    ],
    [
      'a *_SERVICE_HOST that is no IP address',
      { TTLSTREAM_API_SERVICE_HOST: 'api.example' },
      'TTLSTREAM_API_SERVICE_HOST',
    ],
    ['a *_SERVICE_PORT that is no port', { TTLSTREAM_API_SERVICE_PORT: '80a' }, 'TTLSTREAM_API_SERVICE_PORT'],
    [
      'a link whose port is not its name’s',
      { TTLSTREAM_API_PORT_8080_TCP: 'tcp://10.0.0.1:8081' },
      'TTLSTREAM_API_PORT_8080_TCP',
    ],
    [
      'a link whose protocol is not its name’s',
      { TTLSTREAM_API_PORT_53_UDP: 'tcp://10.0.0.1:53' },
      'TTLSTREAM_API_PORT_53_UDP',
    ],
    [
      'a _PROTO that is not its name’s',
      { TTLSTREAM_API_PORT_8080_TCP_PROTO: 'udp' },
      'TTLSTREAM_API_PORT_8080_TCP_PROTO',
    ],
    [
      'a _PORT that is not its name’s',
      { TTLSTREAM_API_PORT_8080_TCP_PORT: '80' },
      'TTLSTREAM_API_PORT_8080_TCP_PORT',
    ],
    [
      'an _ADDR that is no IP address',
      { TTLSTREAM_API_PORT_8080_TCP_ADDR: 'localhost' },
      'TTLSTREAM_API_PORT_8080_TCP_ADDR',
    ],
    [
      'a protocol Kubernetes does not have',
      { TTLSTREAM_API_PORT_8080_HTTP: 'http://10.0.0.1:8080' },
      'TTLSTREAM_API_PORT_8080_HTTP',
    ],
    ['an IPv6 address outside brackets', { TTLSTREAM_API_PORT: 'tcp://fd00::1:8080' }, 'TTLSTREAM_API_PORT'],
  ])('%s is still refused with its name (exit 2)', (_what, env, name) => {
    const message = refusal(env);
    expect(message).toContain(name);
    expect(message.split('\n')).toHaveLength(1);
  });

  it('a setting can be mistaken for a link only on a *_PORT variable, whose values can never be URLs', () => {
    // If a setting ever got a name of another link shape (…_SERVICE_HOST, …_PORT_80_TCP_ADDR), a value the
    // operator meant could be taken for a link and dropped: this test fails first.
    const probes: Array<[string, string]> = [
      ['_SERVICE_HOST', '10.0.0.1'],
      ['_SERVICE_PORT', '80'],
      ['_PORT', 'tcp://10.0.0.1:80'],
    ];
    const shaped = settingsTable().filter(
      (s) =>
        probes.some(([, v]) => isServiceLinkVariable(s.env, v)) ||
        /_SERVICE_PORT_|_PORT_\d+_(TCP|UDP|SCTP)/.test(s.env),
    );
    expect(shaped.map((s) => [s.env, s.type])).toEqual([
      ['TTLSTREAM_API_PORT', 'integer'],
      ['TTLSTREAM_METRICS_PORT', 'integer'],
    ]);
  });

  it('names the Service a link came from', () => {
    expect(serviceOfLink('TTLSTREAM_API_PORT')).toBe('ttlstream-api');
    expect(serviceOfLink('TTLSTREAM_METRICS_PORT_9464_TCP_ADDR')).toBe('ttlstream-metrics');
    expect(serviceOfLink('TTLSTREAM_SERVICE_HOST')).toBe('ttlstream');
  });

  it('`ttlstream config` starts with only TTLSTREAM_API_PORT_8080_TCP set, and says a link on a setting once', async () => {
    const quiet = { TTLSTREAM_QUIET: '1' };
    const only = await cli(['config', '--json'], {
      ...quiet,
      TTLSTREAM_API_PORT_8080_TCP: 'tcp://10.0.0.1:8080',
    });
    expect({ code: only.code, stderr: only.stderr }).toEqual({ code: 0, stderr: '' });
    expect((JSON.parse(only.stdout) as { api: { port: number } }).api.port).toBe(8080);
    const all = await cli(['config'], {
      ...quiet,
      ...serviceLinkEnv([...deployServices(), ...PRODUCT_NAMED]),
    });
    expect(all.code).toBe(0);
    const lines = all.stderr.split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^ttlstream: warning: TTLSTREAM_API_PORT=tcp:\/\/\S+ is the variable Kubernetes sets for the Service ttlstream-api/,
    );
    expect(lines[1]).toMatch(/^ttlstream: warning: TTLSTREAM_METRICS_PORT=/);
    expect(all.stdout).toMatch(/^api\.port +8080 +default +TTLSTREAM_API_PORT$/m);
  });
});
