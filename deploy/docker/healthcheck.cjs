/* global fetch, AbortSignal */
// The image's HEALTHCHECK: GET /healthz on 127.0.0.1, first on the metrics port (TTLSTREAM_METRICS_PORT: a process
// without the API role), then on the API port (TTLSTREAM_API_PORT, default 8080: a process with it). Exit 0 when one
// answers 200 within the timeout, else 1. Plain Node (no curl in the slim image), no dependency.
// A value that is not a port number is a Kubernetes service link (TTLSTREAM_API_PORT=tcp://10.0.0.1:8080 for a Service
// named ttlstream-api), which the process ignores too (core/service-links.ts): the setting's default applies.
const port = (value, fallback) => (value !== undefined && /^\d+$/.test(value) ? value : fallback);
const ports = [port(process.env.TTLSTREAM_METRICS_PORT), port(process.env.TTLSTREAM_API_PORT, '8080')].filter(
  (p, i, all) => p !== undefined && all.indexOf(p) === i,
);
// Within the HEALTHCHECK's own --timeout (5 s), which kills the check after it.
const TIMEOUT_MS = 4000;

async function healthy(port) {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(TIMEOUT_MS) });
    return res.status === 200;
  } catch {
    return false;
  }
}

(async () => {
  for (const port of ports) if (await healthy(port)) process.exit(0);
  process.stderr.write(
    `ttlstream healthcheck: no /healthz answered on 127.0.0.1 port ${ports.join(' or ')}\n`,
  );
  process.exit(1);
})();
