import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

/**
 * deploy/k8s as a cluster receives it: each overlay rendered by `kubectl kustomize` (what `kubectl apply -k` sends),
 * and the environment the kubelet gives a Deployment's container, Kubernetes' own variables included.
 */
export const K8S_DIR = resolve(__dirname, '..', '..', 'deploy', 'k8s');
export const OVERLAYS = ['minimal', 'production'] as const;
export type Overlay = (typeof OVERLAYS)[number];

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string } };
}
export interface Probe {
  httpGet?: { path: string; port: number | string };
  periodSeconds?: number;
  failureThreshold?: number;
  timeoutSeconds?: number;
}
export interface Container {
  name: string;
  image: string;
  args?: string[];
  envFrom?: Array<{ configMapRef?: { name: string } }>;
  env?: EnvVar[];
  ports?: Array<{ name?: string; containerPort: number }>;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] }; sleep?: { seconds: number } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    runAsNonRoot?: boolean;
    runAsUser?: number;
    runAsGroup?: number;
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    capabilities?: { drop?: string[] };
  };
  volumeMounts?: Array<{ name: string; mountPath: string; readOnly?: boolean }>;
}
export interface LabelSelector {
  matchLabels?: Record<string, string>;
}
export interface TopologySpreadConstraint {
  topologyKey: string;
  whenUnsatisfiable: string;
  maxSkew: number;
  labelSelector?: LabelSelector;
  matchLabelKeys?: string[];
}
export interface PodSpec {
  serviceAccountName?: string;
  enableServiceLinks?: boolean;
  terminationGracePeriodSeconds?: number;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; runAsGroup?: number };
  topologySpreadConstraints?: TopologySpreadConstraint[];
  containers: Container[];
  volumes?: Array<{ name: string; emptyDir?: Record<string, unknown> }>;
}
export interface ServicePort {
  name?: string;
  port: number;
  protocol?: string;
}
/** The fields of the kinds deploy/k8s holds that the tests read; `spec` is each kind's own. */
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  data?: Record<string, string>;
  spec?: {
    replicas?: number;
    selector?: LabelSelector;
    template?: { metadata?: { labels?: Record<string, string> }; spec: PodSpec };
    // Service
    type?: string;
    clusterIP?: string;
    ports?: ServicePort[];
    // PodDisruptionBudget
    maxUnavailable?: number | string;
    unhealthyPodEvictionPolicy?: string;
    // NetworkPolicy
    podSelector?: LabelSelector;
    policyTypes?: string[];
    ingress?: Array<{
      from?: Array<{ namespaceSelector?: LabelSelector; podSelector?: LabelSelector }>;
      ports?: Array<{ port: number | string; protocol?: string }>;
    }>;
    egress?: Array<{
      to?: Array<{ ipBlock?: { cidr: string } }>;
      ports?: Array<{ port: number | string; protocol?: string }>;
    }>;
    // PodMonitor
    jobLabel?: string;
    podMetricsEndpoints?: Array<{ port?: string; path?: string }>;
  };
}

/** `kubectl kustomize DIR`: the YAML `kubectl apply -k DIR` would send. */
export function kustomize(dir: string): string {
  try {
    return execFileSync('kubectl', ['kustomize', dir], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      throw new Error(
        'kubectl is not on PATH: the deploy/k8s tests render the overlays with `kubectl kustomize`',
      );
    throw err;
  }
}

/** `kubectl kustomize` of one of deploy/k8s's overlays. */
export function renderOverlay(overlay: Overlay): string {
  return kustomize(join(K8S_DIR, 'overlays', overlay));
}

export function parseManifests(text: string, where: string): Manifest[] {
  return parseAllDocuments(text).map((d) => {
    if (d.errors.length > 0) throw new Error(`${where}: ${d.errors.map((e) => e.message).join('; ')}`);
    return d.toJS() as Manifest;
  });
}

/** The objects a kustomization directory renders (an overlay of deploy/k8s, or an edited copy of one). */
export function renderKustomization(dir: string): Manifest[] {
  return parseManifests(kustomize(dir), dir);
}

export function overlayManifests(overlay: Overlay): Manifest[] {
  return renderKustomization(join(K8S_DIR, 'overlays', overlay));
}

export function podOf(m: Manifest): PodSpec {
  const pod = m.spec?.template?.spec;
  if (!pod) throw new Error(`${m.metadata.name}: no pod template`);
  return pod;
}

export function containerOf(m: Manifest): Container {
  const [c, ...more] = podOf(m).containers;
  if (!c || more.length > 0) throw new Error(`${m.metadata.name}: expected one container`);
  return c;
}

/** The container port a probe asks (by number, or by the name of one of the container's ports). */
export function probePort(c: Container, probe: Probe | undefined): number {
  const port = probe?.httpGet?.port;
  if (typeof port === 'number') return port;
  const named = c.ports?.find((p) => p.name === port)?.containerPort;
  if (named === undefined) throw new Error(`${c.name}: probe port ${String(port)} is not a container port`);
  return named;
}

/** Whether a label selector's matchLabels all hold in `labels` (deploy/k8s uses no matchExpressions). */
export function selects(
  selector: LabelSelector | undefined,
  labels: Record<string, string> | undefined,
): boolean {
  return Object.entries(selector?.matchLabels ?? {}).every(([k, v]) => labels?.[k] === v);
}

/** Kubernetes' variable form of a Service or port name (pkg/kubelet/envvars: upper case, `-` to `_`). */
function envPrefix(name: string): string {
  return name.toUpperCase().replace(/-/g, '_');
}

/** A Service as the kubelet sees it: its cluster IP (one a cluster would assign, when the manifest has none). */
export interface ServiceWithIp {
  name: string;
  clusterIP: string;
  ports: ServicePort[];
}

/**
 * The variables the kubelet sets in a container for each Service (pkg/kubelet/envvars FromServices):
 * NAME_SERVICE_HOST, NAME_SERVICE_PORT (the first port), NAME_SERVICE_PORT_<PORTNAME> per named port, and the Docker
 * link variables NAME_PORT (the first port's URL), NAME_PORT_<n>_<PROTO> with its _PROTO, _PORT and _ADDR per port.
 * An IPv6 cluster IP is bracketed in the URLs (Go's JoinHostPort).
 */
export function serviceLinkVariables(services: ServiceWithIp[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const s of services) {
    const name = envPrefix(s.name);
    const [first] = s.ports;
    if (!first) continue;
    env[`${name}_SERVICE_HOST`] = s.clusterIP;
    env[`${name}_SERVICE_PORT`] = String(first.port);
    for (const p of s.ports) if (p.name) env[`${name}_SERVICE_PORT_${envPrefix(p.name)}`] = String(p.port);
    const host = s.clusterIP.includes(':') ? `[${s.clusterIP}]` : s.clusterIP;
    for (const [i, p] of s.ports.entries()) {
      const proto = (p.protocol ?? 'TCP').toUpperCase();
      const url = `${proto.toLowerCase()}://${host}:${p.port}`;
      if (i === 0) env[`${name}_PORT`] = url;
      const prefix = `${name}_PORT_${p.port}_${proto}`;
      env[prefix] = url;
      env[`${prefix}_PROTO`] = proto.toLowerCase();
      env[`${prefix}_PORT`] = String(p.port);
      env[`${prefix}_ADDR`] = s.clusterIP;
    }
  }
  return env;
}

/** The API server's own Service, `kubernetes` in `default`: the kubelet sets its variables in every pod. */
const KUBERNETES_SERVICE: ServiceWithIp = {
  name: 'kubernetes',
  clusterIP: '10.100.0.1',
  ports: [{ name: 'https', port: 443 }],
};

/**
 * The Services of a rendered overlay that get variables: every one with a cluster IP (not headless, not
 * ExternalName), each given an address of the service range when the manifest sets none.
 */
export function servicesWithIps(manifests: Manifest[]): ServiceWithIp[] {
  return manifests
    .filter((m) => m.kind === 'Service' && m.spec?.type !== 'ExternalName' && m.spec?.clusterIP !== 'None')
    .map((m, i) => ({
      name: m.metadata.name,
      clusterIP: m.spec?.clusterIP ?? `10.100.0.${10 + i}`,
      ports: m.spec?.ports ?? [],
    }));
}

/** Values for the references a container's env makes (a Secret's key, a field of the pod). */
export interface EnvReferences {
  secret(ref: { name: string; key: string }): string;
  field(path: string): string;
}

/** The variables the container sets itself: its config maps (envFrom), then its env, a later one winning. */
export function containerEnvironment(
  deployment: Manifest,
  manifests: Manifest[],
  refs: EnvReferences,
): Record<string, string> {
  const c = containerOf(deployment);
  const env: Record<string, string> = {};
  for (const from of c.envFrom ?? []) {
    const name = from.configMapRef?.name;
    const map = manifests.find((x) => x.kind === 'ConfigMap' && x.metadata.name === name);
    if (!map?.data) throw new Error(`${deployment.metadata.name}: config map ${name} is not in the overlay`);
    Object.assign(env, map.data);
  }
  for (const v of c.env ?? []) {
    // The kubelet expands $(NAME) in a value; the model does not, so a manifest must not rely on it.
    if (v.value?.includes('$('))
      throw new Error(`${deployment.metadata.name}: ${v.name} uses $(…), not modelled`);
    if (v.value !== undefined) env[v.name] = v.value;
    else if (v.valueFrom?.secretKeyRef) env[v.name] = refs.secret(v.valueFrom.secretKeyRef);
    else if (v.valueFrom?.fieldRef) env[v.name] = refs.field(v.valueFrom.fieldRef.fieldPath);
    else throw new Error(`${deployment.metadata.name}: ${v.name} has neither a value nor a reference`);
  }
  return env;
}

/**
 * The environment the kubelet gives the container (pkg/kubelet kubelet_pods.go makeEnvironmentVariables): its own
 * variables, then the service-link variables of the `kubernetes` Service always and of every Service in the
 * namespace unless the pod sets enableServiceLinks: false, each only where the container did not set that name.
 */
export function podEnvironment(
  deployment: Manifest,
  manifests: Manifest[],
  refs: EnvReferences,
  options: { enableServiceLinks?: boolean } = {},
): Record<string, string> {
  const links = options.enableServiceLinks ?? podOf(deployment).enableServiceLinks ?? true;
  const services = [KUBERNETES_SERVICE, ...(links ? servicesWithIps(manifests) : [])];
  return { ...serviceLinkVariables(services), ...containerEnvironment(deployment, manifests, refs) };
}
