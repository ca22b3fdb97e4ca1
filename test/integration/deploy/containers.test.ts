import type { S3Client } from '@aws-sdk/client-s3';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openCatalog } from '../../../archive/catalog';
import { openArchiveStorage } from '../../../archive/storage';
import { ROLE_NAMES, type RoleName } from '../../../cli/kit/run-roles';
import { createS3Client } from '../../../core/clients';
import { parseDuration } from '../../../cli/kit/duration';
import {
  containerOf,
  overlayManifests,
  podEnvironment,
  podOf,
  probePort,
  serviceLinkVariables,
  servicesWithIps,
  type Container,
  type Manifest,
  type PodSpec,
} from '../../support/k8s-manifests';
import { buildImage, podman, podmanOk } from '../../support/podman';
import { ROOT_DIR, testLane } from '../../support/ports';
import { createTestBucket, createTestTable, uniqueName } from '../../support/stack';
import {
  allCommitted,
  archivedOncePerEventId,
  committedOffsets,
  highWatermarks,
  readArchive,
} from '../../support/archive-fixture';
import { messageKey, type Decoded } from '../../../schemas';
import { waitFor } from '../../support/wait-for';
import { freePort } from '../../support/cli-process';
import {
  Collector,
  createEnv,
  pipelineConfig,
  putItems,
  scanAll,
  type Env,
} from '../../support/pipeline-harness';

/**
 * The container image run as Kubernetes runs deploy/k8s: for each role's Deployment, its container from the image
 * this checkout builds (scripts/build-image.sh), with the manifest's args, the ConfigMap's and the container's env
 * (Secret and fieldRef values resolved as the kubelet does), the service-link variables of every Service unless the
 * pod turns them off, its user, read-only root, dropped capabilities, memory limit and its emptyDir on /tmp.
 *
 * Two things differ from a cluster, both forced by this machine (docs/decisions/0028-image-in-ci.md): containers share
 * the host's network (podman has no bridge networking here), so each container port is moved to a free host port and
 * the variable that sets it (TTLSTREAM_API_PORT, TTLSTREAM_METRICS_PORT) follows; and the settings that address the
 * cluster's AWS services (CLUSTER_SETTINGS) are replaced by the lane's local stack, through a config file.
 */
/** The overlay started here: the base as it is (the production one adds cluster objects, not container changes). */
const OVERLAY = 'minimal';
const TOKEN = 'deploy-suite-token-0123456789abcdef';

/** ConfigMap settings that name the cluster's MSK, S3 and KMS: each is replaced by the lane's stack. */
const CLUSTER_SETTINGS = [
  'TTLSTREAM_KAFKA_BROKERS',
  'TTLSTREAM_KAFKA_SSL',
  'TTLSTREAM_KAFKA_SASL_MECHANISM',
  'TTLSTREAM_TOPICS_REPLICATION_FACTOR',
  'TTLSTREAM_TOPICS_MIN_INSYNC_REPLICAS',
  'TTLSTREAM_ARCHIVE_URL',
  'TTLSTREAM_ARCHIVE_S3_FORCE_PATH_STYLE',
  'TTLSTREAM_ARCHIVE_S3_SSE',
  'TTLSTREAM_ARCHIVE_S3_KMS_KEY_ID',
];

interface RunningPod {
  role: RoleName;
  container: string;
  spec: PodSpec;
  main: Container;
  /** Container port -> the host port it listens on here. */
  ports: Map<number, number>;
  startedAt: number;
  /** Resolves with the container's exit code when it exits. */
  exited: Promise<number>;
  readyMs?: number;
}

const version = (JSON.parse(readFileSync(join(ROOT_DIR, 'package.json'), 'utf8')) as { version: string })
  .version;
const suffix = Math.random().toString(36).slice(2, 8);

function deploymentOf(objects: Manifest[], role: RoleName): Manifest {
  const found = objects.filter(
    (o) =>
      o.kind === 'Deployment' && o.spec?.template?.metadata?.labels?.['app.kubernetes.io/component'] === role,
  );
  if (found.length !== 1) throw new Error(`expected one Deployment of role ${role}, found ${found.length}`);
  return found[0] as Manifest;
}

/** podman run's flags for what the pod spec asks of the container (securityContext, volumes, memory limit). */
function securityFlags(pod: PodSpec, main: Container): string[] {
  const user = main.securityContext?.runAsUser ?? pod.securityContext?.runAsUser;
  const group = main.securityContext?.runAsGroup ?? pod.securityContext?.runAsGroup;
  if (user === undefined || user === 0) throw new Error(`container ${main.name} would run as root`);
  const flags = ['--user', `${user}:${group ?? user}`];
  if (main.securityContext?.readOnlyRootFilesystem) flags.push('--read-only', '--read-only-tmpfs=false');
  if (main.securityContext?.allowPrivilegeEscalation === false)
    flags.push('--security-opt', 'no-new-privileges');
  for (const cap of main.securityContext?.capabilities?.drop ?? [])
    flags.push('--cap-drop', cap.toLowerCase());
  for (const mount of main.volumeMounts ?? []) {
    const volume = pod.volumes?.find((v) => v.name === mount.name);
    if (!volume?.emptyDir) throw new Error(`volume ${mount.name}: only emptyDir volumes are run here`);
    flags.push('--tmpfs', `${mount.mountPath}:rw,mode=1777`);
  }
  const memory = main.resources?.limits?.memory;
  if (memory !== undefined) flags.push('--memory', memory.replace(/i$/, '').toLowerCase());
  return flags;
}

describe('deploy: the image runs every role of deploy/k8s as Kubernetes would', () => {
  let image: string;
  let objects: Manifest[];
  let env: Env;
  let s3: S3Client;
  const dir = mkdtempSync(join(tmpdir(), 'ttlstream-deploy-'));
  const pods = new Map<RoleName, RunningPod>();
  let table: string;

  const allLogs = async (): Promise<string> =>
    (
      await Promise.all(
        [...pods.values()].map(async (p) => `--- ${p.role}:\n${await logsOf(p.container, 40)}`),
      )
    ).join('\n');
  const withLogs = async <T>(p: Promise<T>): Promise<T> =>
    p.catch(async (err: unknown) => {
      throw new Error(`${String(err)}\n${await allLogs()}`);
    });

  beforeAll(async () => {
    image = await buildImage();
    objects = overlayManifests(OVERLAY);
    const bucket = uniqueName('deploy-archive');
    env = await createEnv(
      pipelineConfig({
        archive: {
          url: `s3://${bucket}/ttl`,
          rollMs: 500,
          groupId: uniqueName('deploy-group'),
          monitorIntervalMs: 1000,
          sessionTimeoutMs: 6000,
        },
        api: { tokens: [TOKEN], ttlPropagationMs: 0 },
      }),
    );
    s3 = createS3Client(env.config);
    await createTestBucket(s3, bucket);
    // Read by the containers' uid 1000: the folder must be searchable and the file readable.
    chmodSync(dir, 0o755);
    writeFileSync(join(dir, 'config.json'), JSON.stringify(env.config), { mode: 0o644 });
  }, 900_000);

  afterAll(async () => {
    await Promise.all([...pods.values()].map((p) => podman(['rm', '--force', '--time', '0', p.container])));
    await env?.cleanup();
    s3?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('names the image this checkout builds', () => {
    const images = new Set(objects.filter((o) => o.kind === 'Deployment').map((d) => containerOf(d).image));
    expect([...images]).toEqual([`ttlstream:${version}`]);
    expect(image).toBe(`localhost/ttlstream:${version}`);
  });

  it('starts with the link variables of every Service, as a pod that leaves enableServiceLinks on', async () => {
    const links = serviceLinkVariables(servicesWithIps(objects));
    expect(Object.keys(links).length).toBeGreaterThan(0);
    const r = await podman([
      'run',
      '--rm',
      '--network',
      'host',
      '--user',
      '1000:1000',
      ...Object.entries(links).flatMap(([k, v]) => ['--env', `${k}=${v}`]),
      image,
      'config',
    ]);
    expect({ code: r.code, stderr: r.stderr.trim() }).toEqual({ code: 0, stderr: expect.any(String) });
  }, 120_000);

  /** Starts the role's Deployment as one pod's container; resolves once the container runs. */
  const startPod = async (role: RoleName): Promise<RunningPod> => {
    const deployment = deploymentOf(objects, role);
    const spec = podOf(deployment);
    const main = containerOf(deployment);
    const podName = `${deployment.metadata.name}-${suffix}`;
    const environment = podEnvironment(deployment, objects, {
      secret: ({ name, key }) => {
        if (name !== 'ttlstream-api' || key !== 'tokens')
          throw new Error(`no Secret ${name} key ${key} here`);
        return TOKEN;
      },
      field: (path) => {
        if (path !== 'metadata.name') throw new Error(`fieldRef ${path} is not resolved here`);
        return podName;
      },
    });
    for (const name of CLUSTER_SETTINGS) {
      // A ConfigMap that no longer sets one of these makes the list stale: say so rather than pass by accident.
      expect({ [name]: environment[name] }).toEqual({ [name]: expect.any(String) });
      delete environment[name];
    }
    environment.TTLSTREAM_CONFIG = '/etc/ttlstream/config.json';
    // Host networking: each container port moves to a free port, and the variable that sets it follows.
    const ports = new Map<number, number>();
    for (const { containerPort } of main.ports ?? []) {
      const host = await freePort();
      ports.set(containerPort, host);
      const variable = Object.keys(environment).find(
        (k) => k.startsWith('TTLSTREAM_') && k.endsWith('_PORT') && environment[k] === String(containerPort),
      );
      if (variable === undefined)
        throw new Error(`${role}: no TTLSTREAM_*_PORT variable sets port ${containerPort}`);
      environment[variable] = String(host);
    }
    const container = `ttlstream-deploy-${testLane(0)}-${role}-${suffix}`;
    const startedAt = Date.now();
    await podmanOk([
      'run',
      '--detach',
      '--name',
      container,
      '--network',
      'host',
      ...securityFlags(spec, main),
      '--volume',
      `${join(dir, 'config.json')}:/etc/ttlstream/config.json:ro`,
      ...Object.entries(environment).flatMap(([k, v]) => ['--env', `${k}=${v}`]),
      image,
      ...(main.args ?? []),
    ]);
    const exited = podman(['wait', container], 3_600_000).then((r) => Number(r.stdout.trim()));
    const pod: RunningPod = { role, container, spec, main, ports, startedAt, exited };
    pods.set(role, pod);
    return pod;
  };

  /** Polls the readiness probe as the kubelet does, within the startup probe's budget. */
  const awaitReady = async (pod: RunningPod): Promise<void> => {
    const readiness = pod.main.readinessProbe;
    const startup = pod.main.startupProbe;
    if (!readiness?.httpGet) throw new Error(`${pod.role}: no HTTP readiness probe`);
    const port = pod.ports.get(probePort(pod.main, readiness));
    const budgetMs = 1000 * (startup?.periodSeconds ?? 10) * (startup?.failureThreshold ?? 3);
    // A container that exits before it is ready would crash-loop under a kubelet: fail at once, with its exit code.
    const crashed = pod.exited.then((code) => {
      throw new Error(`${pod.role}: the container exited with code ${code} before it was ready`);
    });
    await Promise.race([
      crashed,
      waitFor(
        `${pod.role} ready at ${readiness.httpGet.path} (container port ${probePort(pod.main, readiness)}, here ${port})`,
        async () =>
          (await fetch(`http://127.0.0.1:${port}${readiness.httpGet?.path}`).catch(() => undefined))?.ok,
        budgetMs,
        200,
      ),
    ]);
    crashed.catch(() => undefined);
    pod.readyMs = Date.now() - pod.startedAt;
  };

  /** What the kubelet does when a container dies: the same container, its spec and environment, started again. */
  const restartPod = async (pod: RunningPod): Promise<void> => {
    pod.startedAt = Date.now();
    await podmanOk(['start', pod.container]);
    pod.exited = podman(['wait', pod.container], 3_600_000).then((r) => Number(r.stdout.trim()));
    await awaitReady(pod);
  };

  /** SIGKILL, as the kernel's OOM killer or a node failure ends a container; resolves with its exit code. */
  const killPod = async (pod: RunningPod): Promise<number> => {
    await podmanOk(['kill', '--signal', 'KILL', pod.container]);
    return pod.exited;
  };

  it('makes every role ready at its readiness probe within its startup probe', async () => {
    // The control plane first, as the other roles' tables are enabled through it below; then the rest side by side.
    await withLogs(startPod('api').then(awaitReady));
    await withLogs(
      Promise.all(
        ROLE_NAMES.filter((r) => r !== 'api').map(async (role) => awaitReady(await startPod(role))),
      ),
    );
    expect([...pods.keys()].sort()).toEqual([...ROLE_NAMES].sort());
  }, 300_000);

  it('deletes an expired item, publishes its REMOVE record and archives it, all through the containers', async () => {
    const api = pods.get('api') as RunningPod;
    const apiPort = api.ports.get(probePort(api.main, api.main.readinessProbe ?? {}));
    table = await createTestTable(env.ddb, uniqueName('deploy'), { hashKey: 'pk' });
    env.tables.push(table);
    const res = await fetch(`http://127.0.0.1:${apiPort}/tables/${table}/ttl`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        enabled: true,
        settings: { policy: { mode: 'dynamodb', attributeName: 'exp' } },
      }),
    });
    expect(res.status).toBe(200);
    const now = Math.floor(Date.now() / 1000);
    await putItems(env.ddb, table, [
      { pk: { S: 'expired' }, exp: { N: String(now - 5) }, body: { S: 'gone' } },
      { pk: { S: 'alive' }, exp: { N: String(now + 86_400) } },
    ]);
    await withLogs(
      waitFor(
        'the expired item deleted',
        async () => !(await scanAll(env.ddb, table)).has('expired'),
        90_000,
      ),
    );
    expect([...(await scanAll(env.ddb, table)).keys()]).toEqual(['alive']);
    // The producer's container created the stream topic with its first record (publish precedes delete): read it
    // from the beginning.
    const collector = new Collector(env.kafka);
    await collector.start(env.config.topics.shared);
    try {
      const record = await withLogs(
        waitFor('its REMOVE record on Kafka', () =>
          collector.removes.find((r) => r.dynamodb.Keys.pk?.S === 'expired'),
        ),
      );
      expect(record.eventName).toBe('REMOVE');
      expect(record.userIdentity).toEqual({ type: 'Service', principalId: 'dynamodb.amazonaws.com' });
      const storage = openArchiveStorage(env.config, s3);
      await withLogs(
        waitFor(
          'the record in the S3 archive',
          async () => {
            for await (const row of openCatalog(storage).scan(table))
              if (row.kind === 'remove' && row.eventID === record.eventID) return true;
            return false;
          },
          60_000,
          500,
        ),
      );
    } finally {
      await collector.stop();
    }
  }, 240_000);

  /**
   * A burst of expired items; `kill` runs once `started` says the burst is under way. Afterwards every item of the
   * burst is deleted, each with one effective REMOVE record, and every record on the topic is archived once.
   */
  const burstThrough = async (
    prefix: string,
    count: number,
    started: (left: number, committedAhead: () => Promise<boolean>) => Promise<boolean>,
    kill: (left: () => Promise<number>) => Promise<void>,
  ): Promise<void> => {
    const collector = new Collector(env.kafka);
    await collector.start(env.config.topics.shared);
    const admin = env.kafka.admin();
    await admin.connect();
    try {
      const now = Math.floor(Date.now() / 1000);
      const keys = Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
      const putting = putItems(
        env.ddb,
        table,
        keys.map((k) => ({ pk: { S: k }, exp: { N: String(now - 5) } })),
      );
      const left = async (): Promise<number> => {
        const present = await scanAll(env.ddb, table);
        return keys.filter((k) => present.has(k)).length;
      };
      // Records on the topic that the archiver has not committed yet: a roll is being made.
      const committedAhead = async (): Promise<boolean> => {
        const end = await highWatermarks(admin, env.config.topics.shared);
        const done = await committedOffsets(admin, env.config.archive.groupId, env.config.topics.shared);
        return [...end].some(([p, high]) => BigInt(done.get(p) ?? '-1') < BigInt(high));
      };
      await withLogs(
        waitFor(
          `the ${prefix} burst under way`,
          async () => started(await left(), committedAhead),
          90_000,
          100,
        ),
      );
      await kill(left);
      await putting;
      await withLogs(
        waitFor(`every item of the ${prefix} burst deleted`, async () => (await left()) === 0, 120_000),
      );
      await withLogs(
        waitFor(
          'the archiver caught up',
          () => allCommitted(admin, env.config.archive.groupId, env.config.topics.shared),
          90_000,
        ),
      );
      const effective = collector.effectiveByKey();
      expect(keys.filter((k) => effective.get(messageKey(table, { pk: { S: k } }))?.length !== 1)).toEqual(
        [],
      );
      const contents = await readArchive(openArchiveStorage(env.config, s3));
      expect(contents.problems).toEqual([]);
      const onTopic: Array<{ decoded: Decoded }> = [
        ...collector.removes.map((record) => ({ decoded: { kind: 'remove' as const, record } })),
        ...collector.retractions.map((retraction) => ({ decoded: { kind: 'retract' as const, retraction } })),
      ];
      expect(archivedOncePerEventId(contents.rows, onTopic)).toEqual([]);
    } finally {
      await collector.stop();
      await admin.disconnect();
    }
  };

  it('SIGKILL of the producer container mid-burst: started again in its pod, nothing is lost', async () => {
    const producer = pods.get('producer') as RunningPod;
    let presentAtKill = 0;
    await burstThrough(
      'burst-p',
      600,
      async (left) => left > 0 && left <= 560,
      async (left) => {
        expect(await killPod(producer)).toBe(137);
        presentAtKill = await left();
        await withLogs(restartPod(producer));
      },
    );
    // The kill came mid-burst: items were left for the restarted container.
    expect(presentAtKill).toBeGreaterThan(0);
  }, 300_000);

  it('SIGKILL of the archiver container mid-roll: started again in its pod, every record archived once', async () => {
    const archiver = pods.get('archiver') as RunningPod;
    await burstThrough(
      'burst-a',
      600,
      async (left, committedAhead) => left <= 500 && (await committedAhead()),
      async () => {
        expect(await killPod(archiver)).toBe(137);
        await withLogs(restartPod(archiver));
      },
    );
  }, 300_000);

  it("passes the image's HEALTHCHECK in every container", async () => {
    for (const pod of pods.values()) {
      // The engine runs the image's HEALTHCHECK command in the container: exit 0 healthy, 1 unhealthy.
      const r = await podman(['healthcheck', 'run', pod.container]);
      expect({ role: pod.role, code: r.code, stderr: r.stderr.trim() }).toEqual({
        role: pod.role,
        code: 0,
        stderr: '',
      });
    }
  }, 60_000);

  it('uses less memory than each Deployment allows', async () => {
    const stats = JSON.parse(
      await podmanOk([
        'stats',
        '--no-stream',
        '--format',
        'json',
        ...[...pods.values()].map((p) => p.container),
      ]),
    ) as Array<{ name: string; mem_usage: string }>;
    const lines: string[] = [];
    for (const pod of pods.values()) {
      const usage = stats.find((s) => s.name === pod.container)?.mem_usage ?? '';
      const [used, limit] = usage.split(' / ').map(bytesOf);
      expect({ role: pod.role, below: (used ?? Infinity) < (limit ?? 0) }).toEqual({
        role: pod.role,
        below: true,
      });
      lines.push(`${pod.role}: ready in ${pod.readyMs} ms, memory ${usage}`);
    }
    process.stderr.write(`deploy suite, image ${image}:\n  ${lines.join('\n  ')}\n`);
  }, 60_000);

  it('stops every container cleanly on SIGTERM within terminationGracePeriodSeconds', async () => {
    const stops = await Promise.all(
      [...pods.values()].map(async (pod) => {
        const grace = pod.spec.terminationGracePeriodSeconds ?? 30;
        const t0 = Date.now();
        // SIGTERM, then SIGKILL after the grace, as the kubelet does.
        await podmanOk(['stop', '--time', String(grace), pod.container], (grace + 30) * 1000);
        const ms = Date.now() - t0;
        const state = JSON.parse(
          await podmanOk(['inspect', '--format', '{{json .State}}', pod.container]),
        ) as { ExitCode: number; OOMKilled: boolean };
        const logs = await logsOf(pod.container);
        return { role: pod.role, ms, grace, state, logs };
      }),
    );
    for (const s of stops) {
      expect({ role: s.role, exitCode: s.state.ExitCode, oom: s.state.OOMKilled }).toEqual({
        role: s.role,
        exitCode: 0,
        oom: false,
      });
      expect({ role: s.role, withinGrace: s.ms < s.grace * 1000 }).toEqual({
        role: s.role,
        withinGrace: true,
      });
      expect(s.logs).toMatch(/SIGTERM received, shutting down gracefully/);
    }
    // The bound the ConfigMap gives the graceful stop is inside the grace of every Deployment.
    const configMap = objects.find((o) => o.kind === 'ConfigMap')?.data ?? {};
    const shutdownMs = parseDuration(configMap.TTLSTREAM_SHUTDOWN_TIMEOUT ?? '30s');
    for (const s of stops) expect(shutdownMs).toBeLessThan(s.grace * 1000);
  }, 180_000);
});

/** A container's output, stdout and stderr (the last `tail` lines of each). */
async function logsOf(container: string, tail?: number): Promise<string> {
  const r = await podman(['logs', ...(tail === undefined ? [] : ['--tail', String(tail)]), container]);
  return r.stdout + r.stderr;
}

/** "123.4MB" (podman stats, decimal units) in bytes. */
function bytesOf(text: string): number {
  const m = /^([\d.]+)\s*([kMG]?B)$/.exec(text.trim());
  if (!m) return NaN;
  const unit = { B: 1, kB: 1e3, MB: 1e6, GB: 1e9 }[m[2] as 'B' | 'kB' | 'MB' | 'GB'];
  return Number(m[1]) * unit;
}
