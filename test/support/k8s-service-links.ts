import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

/** What the kubelet reads of a Service to make its link variables. */
export interface ServiceForLinks {
  name: string;
  /** The cluster IP; a headless Service (None) gets no variables. */
  clusterIP: string;
  ports: Array<{ name?: string; port: number; protocol?: 'TCP' | 'UDP' | 'SCTP' }>;
}

const envName = (text: string): string => text.toUpperCase().replace(/-/g, '_');

/**
 * The variables a container gets for `services` when its pod keeps service links on (the default), written from
 * Kubernetes' documented shapes (Service concepts, "Environment variables"; kubelet pkg/kubelet/envvars): HOST and
 * PORT of the first port, PORT_<name> of each named port, and the Docker-link variables of each port, the first one
 * also as <SERVICE>_PORT. An IPv6 cluster IP is bracketed in the URLs (Go's JoinHostPort).
 */
export function serviceLinkEnv(services: ServiceForLinks[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const s of services) {
    if (s.clusterIP === 'None' || s.clusterIP === '' || s.ports.length === 0) continue;
    const prefix = envName(s.name);
    const first = s.ports[0] as ServiceForLinks['ports'][number];
    env[`${prefix}_SERVICE_HOST`] = s.clusterIP;
    env[`${prefix}_SERVICE_PORT`] = String(first.port);
    for (const p of s.ports)
      if (p.name !== undefined) env[`${prefix}_SERVICE_PORT_${envName(p.name)}`] = String(p.port);
    const host = s.clusterIP.includes(':') ? `[${s.clusterIP}]` : s.clusterIP;
    for (const [i, p] of s.ports.entries()) {
      const protocol = p.protocol ?? 'TCP';
      const url = `${protocol.toLowerCase()}://${host}:${p.port}`;
      if (i === 0) env[`${prefix}_PORT`] = url;
      const entry = `${prefix}_PORT_${p.port}_${protocol}`;
      env[entry] = url;
      env[`${entry}_PROTO`] = protocol.toLowerCase();
      env[`${entry}_PORT`] = String(p.port);
      env[`${entry}_ADDR`] = s.clusterIP;
    }
  }
  return env;
}

interface ServiceManifest {
  kind?: string;
  metadata?: { name?: string };
  spec?: {
    clusterIP?: string;
    ports?: Array<{ name?: string; port: number; protocol?: 'TCP' | 'UDP' | 'SCTP' }>;
  };
}

/** The Services of deploy/k8s, each given a cluster IP of 10.100.0.<n> (the cluster would allocate one). */
export function deployServices(): ServiceForLinks[] {
  const dir = resolve(__dirname, '..', '..', 'deploy', 'k8s');
  const manifests = readdirSync(dir)
    .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
    .flatMap((f) =>
      parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS() as ServiceManifest),
    );
  return manifests
    .filter((m) => m.kind === 'Service')
    .map((m, i) => ({
      name: m.metadata?.name ?? '',
      clusterIP: m.spec?.clusterIP ?? `10.100.0.${i + 1}`,
      ports: m.spec?.ports ?? [],
    }));
}
