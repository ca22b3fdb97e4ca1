import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { holdFileLock } from './file-lock';
import { portOpen, ROOT_DIR, runDir, stackHost } from './ports';

/**
 * The three-broker Kafka cluster of infra/cluster.sh (KRaft: three brokers and a controller of their own), beside the
 * lanes on ports of its own; the same variables and defaults as that script.
 */
export const CLUSTER_BROKER_IDS = [1, 2, 3] as const;
export type ClusterBroker = (typeof CLUSTER_BROKER_IDS)[number];

function clusterPort(env: NodeJS.ProcessEnv): number {
  const raw = env.TTLSTREAM_CLUSTER_PORT ?? '21090';
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65532)
    throw new Error(`TTLSTREAM_CLUSTER_PORT=${raw}: expected a port number`);
  return port;
}

/** host:port of broker `id`. */
export function clusterBroker(id: number, env: NodeJS.ProcessEnv = process.env): string {
  return `${stackHost(env)}:${clusterPort(env) + id}`;
}

/** Every broker's address: a client's bootstrap list (kafka.brokers). */
export function clusterBrokers(env: NodeJS.ProcessEnv = process.env): string[] {
  return CLUSTER_BROKER_IDS.map((id) => clusterBroker(id, env));
}

/** The ports of the cluster (its controller's and its brokers') on which nothing listens. */
export async function clusterDownPorts(env: NodeJS.ProcessEnv = process.env): Promise<number[]> {
  const ports = [clusterPort(env), ...CLUSTER_BROKER_IDS.map((id) => clusterPort(env) + id)];
  return (await Promise.all(ports.map(async (p) => ((await portOpen(p)) ? [] : [p])))).flat();
}

/** Resolves when the cluster's controller and every broker listen; else fails saying how to start it. */
export async function requireCluster(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const down = await clusterDownPorts(env);
  if (down.length > 0)
    throw new Error(
      `the three-broker Kafka cluster is not up (nothing listens on ${down.join(', ')} at ${stackHost(env)}): ` +
        'start it with `bash infra/cluster.sh up` (npm test does when it runs this suite, .ci/run in its background set-up)',
    );
}

const execFileAsync = promisify(execFile);

/** infra/cluster.sh kill|stop|start <broker>: `start` resolves once the broker is back in the cluster's metadata. */
export async function clusterCtl(action: 'kill' | 'stop' | 'start', broker: ClusterBroker): Promise<void> {
  try {
    await execFileAsync('bash', [resolve(ROOT_DIR, 'infra', 'cluster.sh'), action, String(broker)], {
      cwd: ROOT_DIR,
      timeout: 180_000,
    });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`infra/cluster.sh ${action} ${broker} failed: ${e.stderr ?? e.message}`);
  }
}

/**
 * The cluster is shared by every test run of the checkout (one per machine in CI): a suite that kills its brokers
 * holds this lock for its whole run.
 */
export function lockCluster(env: NodeJS.ProcessEnv = process.env): Promise<() => void> {
  return holdFileLock(join(runDir(env), 'cluster', 'tests.lock'), 'the Kafka cluster');
}
