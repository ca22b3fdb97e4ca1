import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Registry } from 'prom-client';
import { parseAllDocuments } from 'yaml';
import { parseDuration } from '../../../cli/duration';
import { startMetricsServer } from '../../../cli/metrics-server';
import { ROLE_NAMES } from '../../../cli/run-roles';
import { buildApiServer } from '../../../control/api/server';
import { TtlSettingsStore } from '../../../control/settings-store';
import { loadConfig, parseConfig } from '../../../core/config';
import { silentLogger } from '../../../core/logger';

const ROOT = resolve(__dirname, '..', '..', '..');
const K8S = join(ROOT, 'deploy', 'k8s');
/** `ttlstream run --shutdown-timeout`'s default (cli/commands/run.ts), the bound when nothing sets it. */
const DEFAULT_SHUTDOWN_MS = 30_000;
/** Time a process needs after its graceful stop to exit (flush the log, close sockets): kept below the grace. */
const EXIT_MARGIN_MS = 5_000;

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string } };
}
interface Probe {
  httpGet?: { path: string; port: number | string };
}
interface Container {
  name: string;
  image: string;
  args?: string[];
  envFrom?: Array<{ configMapRef?: { name: string } }>;
  env?: EnvVar[];
  ports?: Array<{ name?: string; containerPort: number }>;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
  securityContext?: {
    runAsNonRoot?: boolean;
    runAsUser?: number;
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    capabilities?: { drop?: string[] };
  };
}
interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  data?: Record<string, string>;
  spec?: {
    template?: {
      spec: {
        serviceAccountName?: string;
        terminationGracePeriodSeconds?: number;
        securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
        containers: Container[];
      };
    };
  };
}

function deployManifests(): Manifest[] {
  return readdirSync(K8S)
    .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
    .flatMap((f) =>
      parseAllDocuments(readFileSync(join(K8S, f), 'utf8')).map((d) => {
        if (d.errors.length > 0) throw new Error(`${f}: ${d.errors.map((e) => e.message).join('; ')}`);
        return d.toJS() as Manifest;
      }),
    );
}

const all = deployManifests();
const deployments = all.filter((m) => m.kind === 'Deployment');
const configMap = all.find((m) => m.kind === 'ConfigMap' && m.metadata.name === 'ttlstream');

function podOf(m: Manifest): NonNullable<NonNullable<Manifest['spec']>['template']>['spec'] {
  const pod = m.spec?.template?.spec;
  if (!pod) throw new Error(`${m.metadata.name}: no pod template`);
  return pod;
}

function containerOf(m: Manifest): Container {
  const [c, ...more] = podOf(m).containers;
  if (!c || more.length > 0) throw new Error(`${m.metadata.name}: expected one container`);
  return c;
}

/** The container's environment as the process sees it: the config map, then its own variables (secret and field
 * references given a placeholder of the right shape). */
function environment(m: Manifest): Record<string, string> {
  const c = containerOf(m);
  const env: Record<string, string> = {};
  for (const from of c.envFrom ?? []) {
    const name = from.configMapRef?.name;
    const map = all.find((x) => x.kind === 'ConfigMap' && x.metadata.name === name);
    if (!map?.data) throw new Error(`${m.metadata.name}: config map ${name} not in deploy/k8s`);
    Object.assign(env, map.data);
  }
  for (const v of c.env ?? []) {
    if (v.value !== undefined) env[v.name] = v.value;
    else if (v.valueFrom?.secretKeyRef) env[v.name] = 'a-secret-token-of-32-characters!';
    else if (v.valueFrom?.fieldRef) env[v.name] = 'ttlstream-pod-7d9f8';
    else throw new Error(`${m.metadata.name}: ${v.name} has neither a value nor a reference`);
  }
  return env;
}

function roleOf(m: Manifest): string {
  const args = containerOf(m).args ?? [];
  expect(args.slice(0, 2)).toEqual(['run', '--roles']);
  expect(args).toHaveLength(3);
  return args[2] as string;
}

/** The port a probe asks, as a number (a named port resolved through the container's ports). */
function probePort(c: Container, probe: Probe | undefined): number {
  const port = probe?.httpGet?.port;
  if (typeof port === 'number') return port;
  const named = c.ports?.find((p) => p.name === port)?.containerPort;
  if (named === undefined) throw new Error(`${c.name}: probe port ${String(port)} is not a container port`);
  return named;
}

describe('deploy/k8s: one Deployment per role', () => {
  it('has exactly one Deployment per role of `ttlstream run`, each running that role alone', () => {
    expect(deployments.map(roleOf).sort()).toEqual([...ROLE_NAMES].sort());
    for (const d of deployments) expect(d.metadata.name).toBe(`ttlstream-${roleOf(d)}`);
  });

  it('sets only variables ttlstream knows, with values its configuration accepts', () => {
    expect(configMap).toBeDefined();
    for (const d of deployments) {
      const env = environment(d);
      const names = Object.keys(env).filter((n) => n.startsWith('TTLSTREAM_'));
      expect(names.length).toBeGreaterThan(5);
      // loadConfig refuses an unknown TTLSTREAM_* name (a typo) and any value the zod schema refuses.
      expect(() => loadConfig({ env, useStackEndpoints: false })).not.toThrow();
      expect(Object.keys(env).filter((n) => !n.startsWith('TTLSTREAM_'))).toEqual([]);
    }
  });

  it('waits longer than the graceful-stop bound before SIGKILL', () => {
    for (const d of deployments) {
      const env = environment(d);
      const bound =
        env.TTLSTREAM_SHUTDOWN_TIMEOUT === undefined
          ? DEFAULT_SHUTDOWN_MS
          : parseDuration(env.TTLSTREAM_SHUTDOWN_TIMEOUT);
      const grace = (podOf(d).terminationGracePeriodSeconds ?? 30) * 1000;
      expect({ deployment: d.metadata.name, enough: grace >= bound + EXIT_MARGIN_MS }).toEqual({
        deployment: d.metadata.name,
        enough: true,
      });
    }
  });

  it('runs as a non-root user, without privilege escalation, on a read-only root file system', () => {
    for (const d of deployments) {
      const pod = podOf(d);
      const c = containerOf(d);
      expect(pod.securityContext?.runAsNonRoot ?? c.securityContext?.runAsNonRoot).toBe(true);
      expect(pod.securityContext?.runAsUser ?? c.securityContext?.runAsUser).not.toBe(0);
      expect(c.securityContext).toMatchObject({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
      expect(pod.serviceAccountName).toBe(`ttlstream-${roleOf(d)}`);
      expect(all.some((m) => m.kind === 'ServiceAccount' && m.metadata.name === pod.serviceAccountName)).toBe(
        true,
      );
    }
  });

  it('probes readiness on /readyz and liveness on /healthz, on the port the process serves them on', async () => {
    // The API role serves the probes on api.port; every other role on metrics.port (cli/metrics-server.ts).
    const config = parseConfig({});
    const ddb = new DynamoDBClient({ region: 'us-east-1', endpoint: 'http://127.0.0.1:9' });
    const app = buildApiServer({
      config,
      ddb,
      store: new TtlSettingsStore(ddb, { controlTable: 'c', propagationMs: 0 }),
      logger: silentLogger,
    });
    await app.ready();
    const metrics = await startMetricsServer(new Registry(), '127.0.0.1', 0, { ready: () => true });
    try {
      for (const d of deployments) {
        const c = containerOf(d);
        const env = environment(d);
        const settings = loadConfig({ env, useStackEndpoints: false });
        expect(settings.api.host).toBe('0.0.0.0');
        const serves = roleOf(d) === 'api' ? settings.api.port : settings.metrics.port;
        expect(c.readinessProbe?.httpGet?.path).toBe('/readyz');
        expect(c.livenessProbe?.httpGet?.path).toBe('/healthz');
        for (const probe of [c.readinessProbe, c.livenessProbe, c.startupProbe])
          expect({ deployment: d.metadata.name, port: probePort(c, probe) }).toEqual({
            deployment: d.metadata.name,
            port: serves,
          });
        for (const path of [c.readinessProbe?.httpGet?.path, c.livenessProbe?.httpGet?.path]) {
          if (roleOf(d) === 'api') expect(app.hasRoute({ method: 'GET', url: path as string })).toBe(true);
          else expect((await fetch(`http://127.0.0.1:${metrics.port}${path as string}`)).status).toBe(200);
        }
      }
    } finally {
      await metrics.stop();
      await app.close();
      ddb.destroy();
    }
  });
});

describe('Dockerfile', () => {
  const lines = readFileSync(join(ROOT, 'Dockerfile'), 'utf8')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0 && !l.startsWith('#'));
  const instructions = lines.map((l) => ({
    op: l.split(/\s+/)[0]?.toUpperCase(),
    rest: l.replace(/^\S+\s*/, ''),
  }));
  const last = (op: string) => instructions.filter((i) => i.op === op).at(-1)?.rest;

  it('builds in stages on Node 24 slim and runs as the unprivileged node user, ttlstream as the entrypoint', () => {
    const froms = instructions.filter((i) => i.op === 'FROM').map((i) => i.rest);
    expect(froms.length).toBeGreaterThanOrEqual(2);
    for (const f of froms) expect(f).toMatch(/^node:24(\.\d+){0,2}-slim\b/);
    const runtime = instructions.slice(instructions.map((i) => i.op).lastIndexOf('FROM'));
    const user = runtime.filter((i) => i.op === 'USER').at(-1)?.rest;
    expect(user).toBeDefined();
    expect(user).not.toMatch(/^(root|0)(:|$)/);
    expect(runtime.findIndex((i) => i.op === 'USER')).toBeLessThan(
      runtime.findIndex((i) => i.op === 'ENTRYPOINT'),
    );
    expect(last('ENTRYPOINT')).toBe('["ttlstream"]');
    expect(last('HEALTHCHECK')).toMatch(/CMD \["node", "\/app\/healthcheck\.cjs"\]/);
  });

  it("its health check asks /healthz on the metrics port, then the API's, and fails when neither answers", async () => {
    const script = join(ROOT, 'deploy', 'docker', 'healthcheck.cjs');
    // Asynchronously: the server answering it runs in this process.
    const run = (env: NodeJS.ProcessEnv): Promise<number | null> =>
      new Promise((done) => {
        execFile(process.execPath, [script], { env: { PATH: process.env.PATH, ...env } }, (err) =>
          done(err ? ((err as { code?: number }).code ?? -1) : 0),
        );
      });
    const server = await startMetricsServer(new Registry(), '127.0.0.1', 0);
    try {
      const closed = String(await closedPort());
      expect(await run({ TTLSTREAM_METRICS_PORT: String(server.port) })).toBe(0);
      expect(await run({ TTLSTREAM_METRICS_PORT: closed, TTLSTREAM_API_PORT: String(server.port) })).toBe(0);
      expect(await run({ TTLSTREAM_METRICS_PORT: closed, TTLSTREAM_API_PORT: closed })).toBe(1);
    } finally {
      await server.stop();
    }
  });
});

/** A port nothing listens on (one just freed). */
async function closedPort(): Promise<number> {
  const s = await startMetricsServer(new Registry(), '127.0.0.1', 0);
  await s.stop();
  return s.port;
}
