import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Registry } from 'prom-client';
import { parse } from 'yaml';
import { parseDuration } from '../../../cli/kit/duration';
import { startMetricsServer } from '../../../cli/run/metrics-server';
import { ROLE_NAMES } from '../../../cli/kit/run-roles';
import { apiOptionsFrom, buildApiServer } from '../../../control/api/server';
import { TtlSettingsStore } from '../../../control/settings-store';
import { loadConfig, parseConfig } from '../../../core/config';
import { silentLogger } from '../../../core/logger';
import {
  type Container,
  containerEnvironment,
  containerOf,
  type EnvReferences,
  type Manifest,
  OVERLAYS,
  overlayManifests,
  podEnvironment,
  podOf,
  probePort,
  renderKustomization,
  selects,
  serviceLinkVariables,
  servicesWithIps,
} from '../../support/k8s-manifests';

const ROOT = resolve(__dirname, '..', '..', '..');
/** `ttlstream run --shutdown-timeout`'s default (cli/run/run.ts), the bound when nothing sets it. */
const DEFAULT_SHUTDOWN_MS = 30_000;
/** Time a process needs after its graceful stop to exit (flush the log, close sockets): kept below the grace. */
const EXIT_MARGIN_MS = 5_000;
/** The Secret's and the pod's fields, given placeholders of the right shape. */
const REFS: EnvReferences = {
  secret: () => 'a-secret-token-of-32-characters!',
  field: () => 'ttlstream-pod-7d9f8',
};

/** Every overlay as `kubectl apply -k` sends it. */
const rendered = new Map(OVERLAYS.map((o) => [o, overlayManifests(o)] as const));

function manifestsOf(overlay: (typeof OVERLAYS)[number]): Manifest[] {
  const all = rendered.get(overlay);
  if (!all) throw new Error(`overlay ${overlay} not rendered`);
  return all;
}

function roleOf(m: Manifest): string {
  const args = containerOf(m).args ?? [];
  expect(args.slice(0, 2)).toEqual(['run', '--roles']);
  expect(args).toHaveLength(3);
  return args[2] as string;
}

/** The port a role serves /metrics (and its probes) on: the API's on api.port, every other on metrics.port. */
function metricsPort(d: Manifest, all: Manifest[]): number {
  const settings = loadConfig({ env: containerEnvironment(d, all, REFS), useStackEndpoints: false });
  const port = roleOf(d) === 'api' ? settings.api.port : settings.metrics.port;
  if (port === undefined)
    throw new Error(`${d.metadata.name}: metrics.port is unset, so nothing serves /metrics`);
  return port;
}

/** The seconds a container's preStop hook holds SIGTERM back: `sleep N` run in the image, or the sleep handler. */
function preStopSeconds(c: Container): number {
  const hook = c.lifecycle?.preStop;
  if (!hook) return 0;
  if (hook.sleep) return hook.sleep.seconds;
  const [command, seconds, ...more] = hook.exec?.command ?? [];
  if (!command?.match(/^(\/usr)?\/bin\/sleep$/) || more.length > 0 || !/^\d+$/.test(seconds ?? ''))
    throw new Error(`${c.name}: preStop ${JSON.stringify(hook)} is not a pause this test can time`);
  return Number(seconds);
}

describe.each(OVERLAYS)('deploy/k8s/overlays/%s: one Deployment per role', (overlay) => {
  const all = manifestsOf(overlay);
  const deployments = all.filter((m) => m.kind === 'Deployment');

  it('has exactly one Deployment per role of `ttlstream run`, each running that role alone', () => {
    expect(deployments.map(roleOf).sort()).toEqual([...ROLE_NAMES].sort());
    for (const d of deployments) expect(d.metadata.name).toBe(`ttlstream-${roleOf(d)}`);
    expect(all.filter((m) => m.kind === 'ConfigMap').map((m) => m.metadata.name)).toEqual(['ttlstream']);
    expect(all.filter((m) => m.kind === 'Service').map((m) => m.metadata.name)).toEqual(['ttlstream-api']);
  });

  it('sets only variables ttlstream knows, with values its configuration accepts', () => {
    for (const d of deployments) {
      const env = containerEnvironment(d, all, REFS);
      const names = Object.keys(env).filter((n) => n.startsWith('TTLSTREAM_'));
      expect(names.length).toBeGreaterThan(5);
      // loadConfig refuses an unknown TTLSTREAM_* name (a typo) and any value the zod schema refuses.
      expect(() => loadConfig({ env, useStackEndpoints: false })).not.toThrow();
      expect(Object.keys(env).filter((n) => !n.startsWith('TTLSTREAM_'))).toEqual([]);
    }
  });

  it('turns off the service-link variables in every pod', () => {
    for (const d of deployments)
      expect({ deployment: d.metadata.name, enableServiceLinks: podOf(d).enableServiceLinks }).toEqual({
        deployment: d.metadata.name,
        enableServiceLinks: false,
      });
  });

  it("starts on the environment the kubelet gives it: Kubernetes' variables for its Services, and its own", () => {
    for (const d of deployments) {
      const env = podEnvironment(d, all, REFS);
      // The kubelet always adds the API server's Service, whatever the pod says: the model must show it.
      expect(env.KUBERNETES_SERVICE_HOST).toBeDefined();
      let verdict = 'accepted';
      try {
        loadConfig({ env, useStackEndpoints: false });
      } catch (err) {
        verdict = (err as Error).message;
      }
      expect({ deployment: d.metadata.name, verdict }).toEqual({
        deployment: d.metadata.name,
        verdict: 'accepted',
      });
    }
  });

  it('waits longer than the preStop pause and the graceful-stop bound before SIGKILL', () => {
    for (const d of deployments) {
      const env = containerEnvironment(d, all, REFS);
      const bound =
        env.TTLSTREAM_SHUTDOWN_TIMEOUT === undefined
          ? DEFAULT_SHUTDOWN_MS
          : parseDuration(env.TTLSTREAM_SHUTDOWN_TIMEOUT);
      const needed = preStopSeconds(containerOf(d)) * 1000 + bound + EXIT_MARGIN_MS;
      const grace = (podOf(d).terminationGracePeriodSeconds ?? 30) * 1000;
      expect({ deployment: d.metadata.name, enough: grace >= needed }).toEqual({
        deployment: d.metadata.name,
        enough: true,
      });
    }
  });

  it('pauses the API before SIGTERM, so that a rolling update takes it out of the endpoints first', () => {
    const api = deployments.find((d) => roleOf(d) === 'api');
    expect(api && preStopSeconds(containerOf(api))).toBeGreaterThanOrEqual(5);
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
    // The API role serves the probes on api.port; every other role on metrics.port (cli/run/metrics-server.ts).
    const config = parseConfig({});
    const ddb = new DynamoDBClient({ region: 'us-east-1', endpoint: 'http://127.0.0.1:9' });
    const app = buildApiServer({
      options: apiOptionsFrom(config),
      ddb,
      store: new TtlSettingsStore(ddb, { controlTable: 'c', propagationMs: 0 }),
      logger: silentLogger,
    });
    await app.ready();
    const metrics = await startMetricsServer(new Registry(), '127.0.0.1', 0, { ready: () => true });
    try {
      for (const d of deployments) {
        const c = containerOf(d);
        const settings = loadConfig({ env: containerEnvironment(d, all, REFS), useStackEndpoints: false });
        expect(settings.api.host).toBe('0.0.0.0');
        const serves = metricsPort(d, all);
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

describe("the kubelet's service-link variables, as the model computes them", () => {
  it('for the Service ttlstream-api: the variables that crash-looped every pod of the namespace', () => {
    expect(serviceLinkVariables(servicesWithIps(manifestsOf('minimal')))).toEqual({
      TTLSTREAM_API_SERVICE_HOST: '10.100.0.10',
      TTLSTREAM_API_SERVICE_PORT: '8080',
      TTLSTREAM_API_SERVICE_PORT_HTTP: '8080',
      TTLSTREAM_API_PORT: 'tcp://10.100.0.10:8080',
      TTLSTREAM_API_PORT_8080_TCP: 'tcp://10.100.0.10:8080',
      TTLSTREAM_API_PORT_8080_TCP_PROTO: 'tcp',
      TTLSTREAM_API_PORT_8080_TCP_PORT: '8080',
      TTLSTREAM_API_PORT_8080_TCP_ADDR: '10.100.0.10',
    });
  });

  it('names every port, the first also unnumbered; a headless or ExternalName Service gets none', () => {
    const service = (name: string, spec: Manifest['spec']): Manifest => ({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name },
      spec,
    });
    const services = servicesWithIps([
      service('ttlstream-dns', {
        clusterIP: '10.100.0.53',
        ports: [
          { name: 'dns-udp', port: 53, protocol: 'UDP' },
          { name: 'dns-tcp', port: 53 },
        ],
      }),
      service('ttlstream-headless', { clusterIP: 'None', ports: [{ port: 80 }] }),
      service('ttlstream-external', { type: 'ExternalName', ports: [{ port: 80 }] }),
    ]);
    expect(serviceLinkVariables(services)).toEqual({
      TTLSTREAM_DNS_SERVICE_HOST: '10.100.0.53',
      TTLSTREAM_DNS_SERVICE_PORT: '53',
      TTLSTREAM_DNS_SERVICE_PORT_DNS_UDP: '53',
      TTLSTREAM_DNS_SERVICE_PORT_DNS_TCP: '53',
      TTLSTREAM_DNS_PORT: 'udp://10.100.0.53:53',
      TTLSTREAM_DNS_PORT_53_UDP: 'udp://10.100.0.53:53',
      TTLSTREAM_DNS_PORT_53_UDP_PROTO: 'udp',
      TTLSTREAM_DNS_PORT_53_UDP_PORT: '53',
      TTLSTREAM_DNS_PORT_53_UDP_ADDR: '10.100.0.53',
      TTLSTREAM_DNS_PORT_53_TCP: 'tcp://10.100.0.53:53',
      TTLSTREAM_DNS_PORT_53_TCP_PROTO: 'tcp',
      TTLSTREAM_DNS_PORT_53_TCP_PORT: '53',
      TTLSTREAM_DNS_PORT_53_TCP_ADDR: '10.100.0.53',
    });
  });
});

/**
 * The same pods with service links on, as a chart or a copy of these manifests without `enableServiceLinks: false`
 * would run them. The manifests keep them off, so what follows is the configuration loader's business, and only
 * what the manifests decide is asserted: the container's own variables win over the links' (the API pod's
 * TTLSTREAM_API_PORT stays its own), and when the loader refuses such an environment it is for a link variable,
 * never for one the manifests set. The loader of this writing refuses every pod here, for TTLSTREAM_API_SERVICE_HOST
 * (an unknown TTLSTREAM_* name); a loader that tolerates Kubernetes' shapes may accept them.
 */
describe.each(OVERLAYS)('deploy/k8s/overlays/%s with service links left on', (overlay) => {
  const all = manifestsOf(overlay);
  const deployments = all.filter((m) => m.kind === 'Deployment');
  const links = serviceLinkVariables(servicesWithIps(all));

  it("gives every pod the Services' variables under its own, which win", () => {
    for (const d of deployments) {
      const own = containerEnvironment(d, all, REFS);
      const env = podEnvironment(d, all, REFS, { enableServiceLinks: true });
      for (const [name, value] of Object.entries(links))
        expect({ deployment: d.metadata.name, name, value: env[name] }).toEqual({
          deployment: d.metadata.name,
          name,
          value: own[name] ?? value,
        });
    }
    const api = deployments.find((d) => roleOf(d) === 'api');
    expect(api && podEnvironment(api, all, REFS, { enableServiceLinks: true }).TTLSTREAM_API_PORT).toBe(
      '8080',
    );
  });

  it('is refused, if at all, for a link variable and never for one the manifests set', () => {
    for (const d of deployments) {
      const own = containerEnvironment(d, all, REFS);
      const env = podEnvironment(d, all, REFS, { enableServiceLinks: true });
      let refused: string | undefined;
      try {
        loadConfig({ env, useStackEndpoints: false });
      } catch (err) {
        refused = /^(TTLSTREAM_[A-Z0-9_]+)/.exec((err as Error).message)?.[1] ?? (err as Error).message;
      }
      if (refused === undefined) continue;
      expect({ deployment: d.metadata.name, refused, isLink: refused in links && !(refused in own) }).toEqual(
        {
          deployment: d.metadata.name,
          refused,
          isLink: true,
        },
      );
    }
  });
});

/** The ports a NetworkPolicy rule lists, as `port/PROTOCOL` (TCP when unsaid). */
function portsOf(rule: { ports?: Array<{ port: number | string; protocol?: string }> }): string[] {
  return (rule.ports ?? []).map((p) => `${p.port}/${p.protocol ?? 'TCP'}`);
}

describe('deploy/k8s/overlays/production: what an EKS operator expects', () => {
  const all = manifestsOf('production');
  const deployments = all.filter((m) => m.kind === 'Deployment');
  const kinds = (kind: string) => all.filter((m) => m.kind === kind);
  const podLabels = (d: Manifest) => d.spec?.template?.metadata?.labels;

  it('has a PodDisruptionBudget per role that lets one pod of it go at a time, and keeps one running', () => {
    for (const d of deployments) {
      const budgets = kinds('PodDisruptionBudget').filter((b) => selects(b.spec?.selector, podLabels(d)));
      expect(budgets.map((b) => b.metadata.name)).toEqual([d.metadata.name]);
      expect(budgets[0]?.spec).toMatchObject({
        maxUnavailable: 1,
        unhealthyPodEvictionPolicy: 'AlwaysAllow',
      });
      expect(d.spec?.replicas).toBeGreaterThanOrEqual(2);
    }
  });

  it('spreads every role over zones as it can, and the API over nodes strictly, by revision', () => {
    for (const d of deployments) {
      const constraints = podOf(d).topologySpreadConstraints ?? [];
      for (const c of constraints) {
        expect(selects(c.labelSelector, podLabels(d))).toBe(true);
        expect(c.labelSelector?.matchLabels?.['app.kubernetes.io/component']).toBe(roleOf(d));
        expect(c).toMatchObject({ maxSkew: 1, matchLabelKeys: ['pod-template-hash'] });
      }
      const over = Object.fromEntries(constraints.map((c) => [c.topologyKey, c.whenUnsatisfiable]));
      expect(over).toEqual({
        'topology.kubernetes.io/zone': 'ScheduleAnyway',
        'kubernetes.io/hostname': roleOf(d) === 'api' ? 'DoNotSchedule' : 'ScheduleAnyway',
      });
    }
  });

  it('admits the API from labelled namespaces and /metrics from the monitoring namespace, nothing else', () => {
    const ingress = kinds('NetworkPolicy').filter((p) => p.spec?.policyTypes?.includes('Ingress'));
    for (const d of deployments) {
      // Who may reach which port, over every ingress policy that selects the pod (policies add up).
      const admitted = ingress
        .filter((p) => selects(p.spec?.podSelector, podLabels(d)))
        .flatMap((p) => p.spec?.ingress ?? [])
        .flatMap((rule) => {
          // A rule without `from` admits every source: none here may.
          expect(rule.from?.length).toBeGreaterThan(0);
          return (rule.from ?? []).flatMap((peer) => {
            expect(peer.podSelector).toBeUndefined();
            const from = JSON.stringify(peer.namespaceSelector?.matchLabels);
            return portsOf(rule).map((port) => `${from} ${port}`);
          });
        });
      const monitoring = JSON.stringify({ 'kubernetes.io/metadata.name': 'monitoring' });
      const clients = JSON.stringify({ 'ttlstream-api-client': 'true' });
      const port = metricsPort(d, all);
      expect(admitted).toContain(`${monitoring} ${port}/TCP`);
      if (roleOf(d) === 'api') expect(admitted).toContain(`${clients} ${port}/TCP`);
      for (const a of admitted) expect([monitoring, clients]).toContain(a.split(' ')[0]);
      if (roleOf(d) !== 'api') expect(admitted.filter((a) => a.startsWith(clients))).toEqual([]);
    }
  });

  it("lets every pod reach DNS, AWS's HTTPS endpoints (STS for IRSA, DynamoDB, S3, KMS) and the Kafka brokers", () => {
    const egress = kinds('NetworkPolicy').filter((p) => p.spec?.policyTypes?.includes('Egress'));
    for (const d of deployments) {
      const open = egress
        .filter((p) => selects(p.spec?.podSelector, podLabels(d)))
        .flatMap((p) => p.spec?.egress ?? [])
        // A port open to any address: no `to`.
        .filter((rule) => rule.to === undefined)
        .flatMap(portsOf);
      const brokers = containerEnvironment(d, all, REFS).TTLSTREAM_KAFKA_BROKERS?.split(',') ?? [];
      expect(brokers.length).toBeGreaterThan(0);
      const kafka = brokers.map((b) => `${b.split(':').at(-1)}/TCP`);
      expect({ deployment: d.metadata.name, open: [...new Set(open)].sort() }).toEqual({
        deployment: d.metadata.name,
        open: expect.arrayContaining(['53/UDP', '53/TCP', '443/TCP', ...kafka]) as string[],
      });
    }
  });

  it('has the Prometheus operator scrape /metrics of every pod, where it is served, as a ttlstream job', () => {
    const [monitor, ...more] = kinds('PodMonitor');
    expect(more).toEqual([]);
    for (const d of deployments) {
      expect(selects(monitor?.spec?.selector, podLabels(d))).toBe(true);
      const c = containerOf(d);
      const served = c.ports?.find((p) => p.containerPort === metricsPort(d, all))?.name;
      const endpoint = monitor?.spec?.podMetricsEndpoints?.find((e) => e.port === served);
      expect({ deployment: d.metadata.name, path: endpoint?.path }).toEqual({
        deployment: d.metadata.name,
        path: '/metrics',
      });
      // The alerting rules read up{job=~"ttlstream.*"}: the job is the value of the pod label jobLabel names.
      expect(podLabels(d)?.[monitor?.spec?.jobLabel ?? '']).toMatch(/^ttlstream/);
    }
  });

  it("holds the alerting rules as a PrometheusRule, generated from deploy/prometheus's (`npm run deploy:prometheus-rule`)", () => {
    expect(kinds('PrometheusRule').map((m) => m.metadata.name)).toEqual(['ttlstream']);
    // `npm run deploy:prometheus-rule` writes it: the same groups, rule for rule, whatever the formatting.
    const file = (path: string) =>
      parse(readFileSync(join(ROOT, 'deploy', path), 'utf8')) as { groups: unknown };
    expect(kinds('PrometheusRule')[0]?.spec).toEqual({
      groups: file('prometheus/ttlstream-rules.yml').groups,
    });
  });

  it('points every runbook_url at the base its commented patch names, once the operator un-comments it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ttlstream-k8s-'));
    try {
      cpSync(join(ROOT, 'deploy', 'k8s'), dir, { recursive: true });
      const file = join(dir, 'overlays', 'production', 'kustomization.yaml');
      const text = readFileSync(file, 'utf8');
      const edited = text.replace(
        /^ {2}# (- target: \{ kind: PrometheusRule, name: ttlstream \})\n {2}# ( {2}patch: .*ttlstream~1runbook-base.*)$/m,
        '  $1\n  $2',
      );
      expect(edited).not.toBe(text);
      writeFileSync(file, edited);
      const rule = renderKustomization(join(dir, 'overlays', 'production')).find(
        (m) => m.kind === 'PrometheusRule',
      ) as unknown as {
        spec: { groups: Array<{ rules: Array<{ annotations?: { runbook_url?: string } }> }> };
      };
      const urls = rule.spec.groups.flatMap((g) => g.rules.flatMap((r) => r.annotations?.runbook_url ?? []));
      expect(urls.length).toBeGreaterThan(10);
      for (const url of urls)
        expect(url).toMatch(/^https:\/\/docs\.example\.com\/ttlstream\/operations\.md#ttlstream[a-z]+$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('requests as much memory as each container may use', () => {
    for (const d of deployments) {
      const { requests, limits } = containerOf(d).resources ?? {};
      expect({ deployment: d.metadata.name, memory: requests?.memory }).toEqual({
        deployment: d.metadata.name,
        memory: limits?.memory,
      });
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
    // Every stage starts from BASE_IMAGE, whose default is the official Node 24 slim image (scripts/build-image.sh
    // passes a stand-in where no image registry can be reached).
    expect(instructions.find((i) => i.op === 'ARG')?.rest).toMatch(/^BASE_IMAGE=node:24(\.\d+){0,2}-slim$/);
    const froms = instructions.filter((i) => i.op === 'FROM').map((i) => i.rest);
    expect(froms.length).toBeGreaterThanOrEqual(2);
    for (const f of froms) expect(f).toMatch(/^\$\{BASE_IMAGE\}( AS \w+)?$/);
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
