import { execFileSync } from 'node:child_process';
import { parseAllDocuments } from 'yaml';

/**
 * What the tests read of the Kubernetes manifests (deploy/k8s), and how a kubelet turns a pod spec into a container's
 * environment. The shapes follow the Kubernetes API (core/v1, apps/v1); only the fields the tests use are typed.
 */
export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: { name: string; key: string };
    configMapKeyRef?: { name: string; key: string };
    fieldRef?: { fieldPath: string };
  };
}
export interface HttpProbe {
  httpGet?: { path: string; port: number | string };
  periodSeconds?: number;
  failureThreshold?: number;
  timeoutSeconds?: number;
}
export interface Container {
  name: string;
  image: string;
  args?: string[];
  envFrom?: Array<{ configMapRef?: { name: string }; secretRef?: { name: string } }>;
  env?: EnvVar[];
  ports?: Array<{ name?: string; containerPort: number; protocol?: string }>;
  readinessProbe?: HttpProbe;
  livenessProbe?: HttpProbe;
  startupProbe?: HttpProbe;
  lifecycle?: { preStop?: { exec?: { command: string[] }; sleep?: { seconds: number } } };
  resources?: { limits?: { memory?: string; cpu?: string }; requests?: { memory?: string; cpu?: string } };
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
export interface PodSpec {
  serviceAccountName?: string;
  terminationGracePeriodSeconds?: number;
  enableServiceLinks?: boolean;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; runAsGroup?: number };
  containers: Container[];
  volumes?: Array<{ name: string; emptyDir?: Record<string, unknown> }>;
}
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  data?: Record<string, string>;
  spec?: {
    replicas?: number;
    template?: { metadata?: { labels?: Record<string, string> }; spec: PodSpec };
    ports?: Array<{ name?: string; port: number; protocol?: string }>;
  };
}

/** `kubectl kustomize DIR`, parsed: every object the directory (a kustomization) renders. */
export function renderKustomization(dir: string): Manifest[] {
  const yaml = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  return parseAllDocuments(yaml).map((d, i) => {
    if (d.errors.length > 0)
      throw new Error(`kubectl kustomize ${dir}, object ${i}: ${d.errors[0]?.message}`);
    return d.toJS() as Manifest;
  });
}

/** The pod spec of a Deployment. */
export function podSpecOf(deployment: Manifest): PodSpec {
  const spec = deployment.spec?.template?.spec;
  if (!spec) throw new Error(`${deployment.kind} ${deployment.metadata.name} has no pod template`);
  return spec;
}

/**
 * The variables the kubelet gives every container for each Service of its namespace when the pod spec leaves
 * `enableServiceLinks` on (its default): the Docker-links shapes, `<NAME>_SERVICE_HOST`, `<NAME>_SERVICE_PORT`,
 * `<NAME>_SERVICE_PORT_<PORT NAME>`, `<NAME>_PORT`, `<NAME>_PORT_<port>_<PROTO>` and its `_PROTO`, `_PORT`, `_ADDR`
 * (NAME: the Service's name upper-cased, `-` as `_`). `clusterIp` stands for each Service's address.
 */
export function serviceLinkVariables(services: Manifest[], clusterIp = '10.96.0.10'): Record<string, string> {
  const out: Record<string, string> = {};
  for (const service of services) {
    const name = service.metadata.name.toUpperCase().replace(/-/g, '_');
    const ports = service.spec?.ports ?? [];
    const first = ports[0];
    if (first === undefined) continue;
    out[`${name}_SERVICE_HOST`] = clusterIp;
    out[`${name}_SERVICE_PORT`] = String(first.port);
    for (const p of ports)
      if (p.name) out[`${name}_SERVICE_PORT_${p.name.toUpperCase().replace(/-/g, '_')}`] = String(p.port);
    const proto = (first.protocol ?? 'TCP').toLowerCase();
    out[`${name}_PORT`] = `${proto}://${clusterIp}:${first.port}`;
    for (const p of ports) {
      const protocol = (p.protocol ?? 'TCP').toUpperCase();
      const prefix = `${name}_PORT_${p.port}_${protocol}`;
      out[prefix] = `${protocol.toLowerCase()}://${clusterIp}:${p.port}`;
      out[`${prefix}_PROTO`] = protocol.toLowerCase();
      out[`${prefix}_PORT`] = String(p.port);
      out[`${prefix}_ADDR`] = clusterIp;
    }
  }
  return out;
}

/** What the kubelet resolves a container's variables from, beside the objects of the namespace. */
export interface PodContext {
  /** The pod's name (fieldRef metadata.name). */
  podName: string;
  namespace: string;
  /** Secrets the operator creates outside the manifests, by name and key. */
  secrets: Record<string, Record<string, string>>;
}

/**
 * A container's environment as the kubelet builds it: the service links of every Service in the namespace (unless
 * the pod turns them off), then `envFrom` in order, then `env` in order; a later source wins a name.
 */
export function containerEnvironment(
  objects: Manifest[],
  pod: PodSpec,
  container: Container,
  context: PodContext,
): Record<string, string> {
  const configMap = (name: string): Record<string, string> => {
    const found = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === name);
    if (!found) throw new Error(`container ${container.name}: no ConfigMap ${name} in the manifests`);
    return found.data ?? {};
  };
  const secret = (name: string): Record<string, string> => {
    const found = context.secrets[name];
    if (!found) throw new Error(`container ${container.name}: the test gives no Secret ${name}`);
    return found;
  };
  const env: Record<string, string> =
    pod.enableServiceLinks === false ? {} : serviceLinkVariables(objects.filter((o) => o.kind === 'Service'));
  for (const from of container.envFrom ?? []) {
    if (from.configMapRef) Object.assign(env, configMap(from.configMapRef.name));
    if (from.secretRef) Object.assign(env, secret(from.secretRef.name));
  }
  for (const v of container.env ?? []) env[v.name] = valueOf(v, configMap, secret, context);
  return env;
}

function valueOf(
  v: EnvVar,
  configMap: (name: string) => Record<string, string>,
  secret: (name: string) => Record<string, string>,
  context: PodContext,
): string {
  if (v.value !== undefined) return v.value;
  const from = v.valueFrom;
  const pick = (source: Record<string, string>, key: string, what: string): string => {
    const value = source[key];
    if (value === undefined) throw new Error(`${v.name}: ${what} has no key ${key}`);
    return value;
  };
  if (from?.configMapKeyRef)
    return pick(configMap(from.configMapKeyRef.name), from.configMapKeyRef.key, 'ConfigMap');
  if (from?.secretKeyRef) return pick(secret(from.secretKeyRef.name), from.secretKeyRef.key, 'Secret');
  if (from?.fieldRef?.fieldPath === 'metadata.name') return context.podName;
  if (from?.fieldRef?.fieldPath === 'metadata.namespace') return context.namespace;
  throw new Error(`${v.name}: a value source the tests do not resolve (${JSON.stringify(from)})`);
}

/** The container port a probe names (by number, or by the name of one of the container's ports). */
export function probePort(container: Container, probe: HttpProbe): number {
  const port = probe.httpGet?.port;
  if (typeof port === 'number') return port;
  const named = container.ports?.find((p) => p.name === port);
  if (!named)
    throw new Error(`container ${container.name}: a probe names port ${String(port)}, which it lacks`);
  return named.containerPort;
}
