import { createServer, type Server } from 'node:http';
import type { Registry } from 'prom-client';

/** `/metrics` on its own port, for processes that run without the API role. */
export async function startMetricsServer(
  registry: Registry,
  host: string,
  port: number,
): Promise<{ port: number; stop(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    if (req.method === 'GET' && (req.url === '/metrics' || req.url?.startsWith('/metrics?'))) {
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
    res.end('not found: try /metrics\n');
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
