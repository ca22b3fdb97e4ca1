import { Registry } from 'prom-client';
import { startMetricsServer } from '../../../../cli/run/metrics-server';

/**
 * A process without the API role (scanner, producer, archiver) serves its metrics on metrics.port, and there the
 * probes an orchestrator uses (deploy/k8s/: liveness /healthz, readiness /readyz), so every role is probed alike.
 */
describe('the metrics server of a process without the API role', () => {
  it('answers /healthz always, /readyz 503 until ready and after, and /metrics', async () => {
    let ready = false;
    const server = await startMetricsServer(new Registry(), '127.0.0.1', 0, { ready: () => ready });
    const get = async (path: string): Promise<{ status: number; body: string }> => {
      const res = await fetch(`http://127.0.0.1:${server.port}${path}`);
      return { status: res.status, body: await res.text() };
    };
    try {
      expect(await get('/healthz')).toEqual({ status: 200, body: '{"status":"ok"}' });
      expect((await get('/readyz')).status).toBe(503);
      ready = true;
      expect(await get('/readyz')).toEqual({ status: 200, body: '{"status":"ready"}' });
      expect(await get('/readyz?verbose=1')).toEqual({ status: 200, body: '{"status":"ready"}' });
      ready = false;
      expect((await get('/readyz')).status).toBe(503);
      expect((await get('/metrics')).status).toBe(200);
      expect((await get('/other')).status).toBe(404);
    } finally {
      await server.stop();
    }
  });

  it('is ready by default when nobody says otherwise', async () => {
    const server = await startMetricsServer(new Registry(), '127.0.0.1', 0);
    try {
      expect((await fetch(`http://127.0.0.1:${server.port}/readyz`)).status).toBe(200);
    } finally {
      await server.stop();
    }
  });
});
