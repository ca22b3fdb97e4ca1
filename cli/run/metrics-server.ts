import { createServer, type Server, type ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';

export interface MetricsServerOptions {
  /** Whether the process's roles are up: `/readyz` answers 200 then, 503 before and once the stop began. */
  ready?: () => boolean;
}

/**
 * `/metrics` on its own port, for processes that run without the API role, with the probes an orchestrator asks:
 * `/healthz` (the process answers) and `/readyz` (its roles have started and it is not stopping), as the API's.
 */
export async function startMetricsServer(
  registry: Registry,
  host: string,
  port: number,
  options: MetricsServerOptions = {},
): Promise<{ port: number; stop(): Promise<void> }> {
  const json = (res: ServerResponse, status: number, body: object): void => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(body));
  };
  const server: Server = createServer((req, res) => {
    const path = req.url?.split('?')[0];
    if (req.method === 'GET' && path === '/healthz') return json(res, 200, { status: 'ok' });
    if (req.method === 'GET' && path === '/readyz') {
      return (options.ready?.() ?? true)
        ? json(res, 200, { status: 'ready' })
        : json(res, 503, { error: 'not-ready', message: 'roles starting or stopping' });
    }
    if (req.method === 'GET' && path === '/metrics') {
      registry.metrics().then(
        (body) => {
          res.writeHead(200, { 'content-type': registry.contentType });
          res.end(body);
        },
        (err: unknown) => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(String(err));
        },
      );
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found: try /metrics, /healthz or /readyz\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : port,
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}
