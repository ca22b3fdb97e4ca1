import { join } from 'node:path';
import { holdFileLock } from './file-lock';
import { proxiedPort, stackDataDir, stackHost, stackPort, type ProxiedService } from './ports';

/**
 * A small typed client of Toxiproxy's HTTP API (v2.5.0), for network-fault tests. The stack's Toxiproxy (infra/lib.sh)
 * starts with one proxy per service, named `kafka` and `dynamodb`; Kafka's PROXIED listener advertises the kafka
 * proxy's address, so a client bootstrapping there stays behind the proxy. Faults are toxics on a proxy (each
 * `downstream`, server to client, or `upstream`) or a disabled proxy (connections refused, open ones closed).
 */

/** The toxics of Toxiproxy 2.5.0 this project uses, with their attributes (times in ms, rates in KB/s). */
export type ToxicSpec =
  /** Delays every chunk of data by `latency` ± `jitter`. */
  | { type: 'latency'; attributes: { latency: number; jitter?: number } }
  /** Resets the connection (TCP RST) `timeout` ms after the toxic meets it (0: at once). */
  | { type: 'reset_peer'; attributes: { timeout: number } }
  /** Stops all data; closes the connection after `timeout` ms, or never (0: a black hole until removed). */
  | { type: 'timeout'; attributes: { timeout: number } }
  /** Limits the throughput to `rate` KB/s. */
  | { type: 'bandwidth'; attributes: { rate: number } }
  /** Splits data into chunks of `average_size` ± `size_variation` bytes, `delay` µs apart. */
  | { type: 'slicer'; attributes: { average_size: number; size_variation?: number; delay?: number } }
  /** Closes the connection once `bytes` bytes went through it. */
  | { type: 'limit_data'; attributes: { bytes: number } }
  /** Holds a close (the other side hanging up) back for `delay` ms. */
  | { type: 'slow_close'; attributes: { delay: number } };

export type ToxicType = ToxicSpec['type'];

export interface ToxicOptions {
  /** Unique within the proxy; default `<type>-<stream>`. */
  name?: string;
  /** Default `downstream` (server to client). */
  stream?: 'upstream' | 'downstream';
  /** The probability that the toxic applies to a connection (0..1), default 1. */
  toxicity?: number;
}

export type Toxic = ToxicSpec & Required<ToxicOptions>;

export interface ProxyState {
  name: string;
  listen: string;
  upstream: string;
  enabled: boolean;
  toxics: Toxic[];
}

export class ToxiproxyError extends Error {}

export class Toxiproxy {
  constructor(readonly apiUrl: string) {}

  /** The stack's Toxiproxy, at the address infra/lib.sh starts it on (same variables and defaults). */
  static ofStack(env: NodeJS.ProcessEnv = process.env): Toxiproxy {
    return new Toxiproxy(`http://${stackHost(env)}:${stackPort('toxiproxy', env)}`);
  }

  /** The Kafka bootstrap address and the DynamoDB endpoint of the stack's services behind this proxy. */
  static stackAddresses(env: NodeJS.ProcessEnv = process.env): {
    kafkaBroker: string;
    dynamodbEndpoint: string;
  } {
    const host = stackHost(env);
    return {
      kafkaBroker: `${host}:${proxiedPort('kafka', env)}`,
      dynamodbEndpoint: `http://${host}:${proxiedPort('dynamodb', env)}`,
    };
  }

  /**
   * Toxiproxy's state (toxics, proxies) is shared by everything on the stack. Each jest worker has a stack of its
   * own (integration-env.ts), but two test runs (two jest processes) can still meet on one: every suite that adds
   * toxics holds this lock for its whole run (take it in beforeAll, release it in afterAll). A lock whose holder
   * process is gone is taken over.
   */
  static async lock(env: NodeJS.ProcessEnv = process.env, timeoutMs = 600_000): Promise<() => void> {
    try {
      return await holdFileLock(join(stackDataDir(env), 'toxiproxy', 'tests.lock'), 'Toxiproxy', timeoutMs);
    } catch (err) {
      throw new ToxiproxyError((err as Error).message);
    }
  }

  private async call<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<T> {
    let res: Response;
    try {
      res = await fetch(`${this.apiUrl}${path}`, {
        method,
        ...(body === undefined
          ? {}
          : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
        signal: AbortSignal.timeout(5000),
      });
    } catch (err) {
      throw new ToxiproxyError(
        `Toxiproxy at ${this.apiUrl} did not answer ${method} ${path}: ${String(err)} (is the stack up? npm run infra:up)`,
      );
    }
    const text = await res.text();
    if (!res.ok) throw new ToxiproxyError(`Toxiproxy ${method} ${path}: HTTP ${res.status} ${text}`);
    return (text === '' ? undefined : JSON.parse(text)) as T;
  }

  async version(): Promise<string> {
    const res = await fetch(`${this.apiUrl}/version`, { signal: AbortSignal.timeout(5000) });
    return (await res.text()).trim();
  }

  async proxies(): Promise<Record<string, ProxyState>> {
    return this.call('GET', '/proxies');
  }

  async proxy(name: string): Promise<ProxyState> {
    return this.call('GET', `/proxies/${encodeURIComponent(name)}`);
  }

  /** Create a proxy (fails if one of that name exists). */
  async createProxy(spec: { name: string; listen: string; upstream: string }): Promise<ProxyState> {
    return this.call('POST', '/proxies', { ...spec, enabled: true });
  }

  async deleteProxy(name: string): Promise<void> {
    await this.call('DELETE', `/proxies/${encodeURIComponent(name)}`);
  }

  /** Every proxy enabled, every toxic removed: the state a test starts from (and leaves behind). */
  async reset(): Promise<void> {
    await this.call('POST', '/reset');
  }

  /** Disabled: the proxy refuses connections and closes the open ones. Enabled: it listens again. */
  async setEnabled(proxy: string, enabled: boolean): Promise<void> {
    await this.call('POST', `/proxies/${encodeURIComponent(proxy)}`, { enabled });
  }

  async addToxic(proxy: string, spec: ToxicSpec, options: ToxicOptions = {}): Promise<Toxic> {
    const stream = options.stream ?? 'downstream';
    return this.call('POST', `/proxies/${encodeURIComponent(proxy)}/toxics`, {
      name: options.name ?? `${spec.type}-${stream}`,
      type: spec.type,
      stream,
      toxicity: options.toxicity ?? 1,
      attributes: spec.attributes,
    });
  }

  async removeToxic(proxy: string, name: string): Promise<void> {
    await this.call('DELETE', `/proxies/${encodeURIComponent(proxy)}/toxics/${encodeURIComponent(name)}`);
  }

  async toxics(proxy: string): Promise<Toxic[]> {
    return this.call('GET', `/proxies/${encodeURIComponent(proxy)}/toxics`);
  }
}

export type { ProxiedService };
