import { spawn } from 'node:child_process';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { requireBinary } from '../../support/observability-tools';
import { freePort } from '../../support/cli-process';

export interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface PromAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: 'pending' | 'firing';
}

export interface PrometheusProcess {
  url: string;
  /** An instant query; throws with Prometheus's error (a parse error, say) when it is not a success. */
  query(expr: string): Promise<PromSample[]>;
  alerts(): Promise<PromAlert[]>;
  /**
   * Replace the scraped targets (file-based discovery, as Kubernetes discovery would drop a pod): a target taken
   * away is gone, not down. Resolves once Prometheus scrapes exactly these.
   */
  setTargets(targets: string[]): Promise<void>;
  output(): string;
  stop(): Promise<void>;
}

/**
 * The rules file with every `for:` in seconds instead of minutes (`for: 2m` becomes `for: 2s`), written to `dest`:
 * the same expressions, labels and annotations, so a suite shows an alert with a `for` going pending, firing and
 * resolved on a real Prometheus in seconds. The durations themselves are promtool's to check
 * (deploy/prometheus/tests, test/unit/deploy/prometheus-rules.test.ts), on simulated time.
 */
export function rulesWithForInSeconds(src: string, dest: string): string {
  const text = readFileSync(src, 'utf8');
  const fast = text.replace(/^(\s+for: )(\d+)m$/gm, '$1$2s');
  if (fast === text) throw new Error(`${src}: no \`for: <n>m\` to shorten`);
  if (/^\s+for: /m.test(fast.replace(/^\s+for: \d+s$/gm, '')))
    throw new Error(`${src}: a \`for\` not in minutes`);
  writeFileSync(dest, fast);
  return dest;
}

/**
 * A real Prometheus (the Debian package's binary) on a free port with its own data directory under `dir`, scraping
 * `targets` (file-based discovery: setTargets changes them) every second as job `ttlstream` and evaluating
 * `ruleFiles` every second. Resolves once it is ready.
 */
export async function startPrometheus(opts: {
  dir: string;
  targets: string[];
  ruleFiles: string[];
}): Promise<PrometheusProcess> {
  const binary = requireBinary('prometheus');
  const port = await freePort();
  const config = join(opts.dir, 'prometheus.yml');
  const targetsFile = join(opts.dir, 'targets.json');
  const writeTargets = (targets: string[]): void => {
    // Whole or not at all: Prometheus reads the file when it changes.
    writeFileSync(`${targetsFile}.tmp`, JSON.stringify([{ targets }]));
    renameSync(`${targetsFile}.tmp`, targetsFile);
  };
  writeTargets(opts.targets);
  writeFileSync(
    config,
    JSON.stringify({
      global: { scrape_interval: '1s', scrape_timeout: '900ms', evaluation_interval: '1s' },
      rule_files: opts.ruleFiles,
      scrape_configs: [
        { job_name: 'ttlstream', file_sd_configs: [{ files: [targetsFile], refresh_interval: '1s' }] },
      ],
    }),
  );
  const child = spawn(
    binary,
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(opts.dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const url = `http://127.0.0.1:${port}`;

  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await Promise.race([exited, sleep(10_000).then(() => child.kill('SIGKILL'))]);
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`prometheus exited at start:\n${out}`);
    const ready = await fetch(`${url}/-/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`prometheus not ready within 30 s:\n${out}`);
    }
    await sleep(200);
  }

  const api = async <T>(path: string): Promise<T> => {
    const res = await fetch(url + path);
    const body = (await res.json()) as { status: string; data: T; error?: string; errorType?: string };
    if (body.status !== 'success')
      throw new Error(`${path}: ${body.errorType ?? ''} ${body.error ?? res.status}`);
    return body.data;
  };
  return {
    url,
    async query(expr) {
      const data = await api<{ resultType: string; result: PromSample[] }>(
        `/api/v1/query?query=${encodeURIComponent(expr)}`,
      );
      return data.resultType === 'vector' ? data.result : [];
    },
    async alerts() {
      return (await api<{ alerts: PromAlert[] }>('/api/v1/alerts')).alerts;
    },
    async setTargets(targets) {
      writeTargets(targets);
      const want = [...targets].sort().join(',');
      const deadline = Date.now() + 30_000;
      for (;;) {
        const active = await api<{ activeTargets: Array<{ labels: { instance?: string } }> }>(
          '/api/v1/targets?state=active',
        );
        const have = active.activeTargets
          .map((t) => t.labels.instance ?? '')
          .sort()
          .join(',');
        if (have === want) return;
        if (Date.now() > deadline) throw new Error(`prometheus scrapes [${have}], not [${want}]\n${out}`);
        await sleep(200);
      }
    },
    output: () => out,
    stop,
  };
}
