/**
 * A pipeline process for tests: `npx tsx test/support/pipeline-process.ts scanner producer [archiver]` starts the named roles
 * with configuration from the environment (TTLSTREAM_*), prints one JSON line `{"ready":true,...}` on stdout once
 * they run, and stops gracefully on SIGTERM/SIGINT (exit 0). Crash points (TTLSTREAM_CRASH_AT) apply as in
 * production code. TTLSTREAM_OWNER_ID fixes the lease owner id (else host-pid-random). With `metrics.port` set
 * (TTLSTREAM_METRICS_PORT) it serves /metrics there, as `ttlstream run` does, for suites that watch what an operator
 * would see.
 *
 * To test graceful stops, start it as `node --import tsx test/support/pipeline-process.ts ...`: the tsx CLI relays
 * SIGTERM to its child and SIGKILLs the child if it does not acknowledge within 30 ms, which a busy process misses.
 */
import { startArchiver } from '../../archiver';
import { archiverOptionsFrom } from '../../archiver/options';
import { openArchiveStorage } from '../../archive/storage';
import { loadConfig } from '../../core/config';
import { createDynamoClient, createKafka } from '../../core/clients';
import { createLogger } from '../../core/logger';
import { producerOptionsFrom, startProducer } from '../../producer';
import { scannerOptionsFrom, startScanner } from '../../scanner';
import { settingsStoreOf } from './settings-store';
import { exitAfterOutput } from '../../core/exit';
import { registry } from '../../core/metrics';
import { startMetricsServer } from '../../cli/run/metrics-server';

const ROLES = ['scanner', 'producer', 'archiver'] as const;
type Role = (typeof ROLES)[number];
const STOP_DEADLINE_MS = 60_000;

async function main(): Promise<void> {
  const roles = process.argv.slice(2);
  const bad = roles.filter((r) => !(ROLES as readonly string[]).includes(r));
  if (roles.length === 0 || bad.length > 0) {
    process.stderr.write(
      `usage: pipeline-process.ts ${ROLES.join('|')} [...] (got: ${roles.join(' ') || 'nothing'})\n`,
    );
    return exitAfterOutput(2);
  }
  const config = loadConfig();
  const logger = createLogger({ level: config.log.level, name: `pipeline-${roles.join('+')}` });
  const ddb = createDynamoClient(config);
  const kafka = createKafka(config, logger);
  const settingsStore = settingsStoreOf(ddb, config);
  const ownerId = process.env.TTLSTREAM_OWNER_ID;
  const deps = { ddb, settingsStore, logger, ...(ownerId ? { ownerId } : {}) };

  // Stopped in reverse: the roles first, the metrics server (started first) last.
  const running: Array<{ stop(): Promise<void> }> = [];
  if (config.metrics.port !== undefined)
    running.push(await startMetricsServer(registry, config.api.host, config.metrics.port));
  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    const deadline = setTimeout(() => {
      logger.error('graceful stop took too long; exiting');
      exitAfterOutput(1);
    }, STOP_DEADLINE_MS);
    void (async () => {
      for (const r of [...running].reverse()) await r.stop();
      clearTimeout(deadline);
      ddb.destroy();
      exitAfterOutput(0);
    })().catch((err: unknown) => {
      logger.error({ err }, 'stop failed');
      exitAfterOutput(1);
    });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));

  for (const role of roles as Role[]) {
    const r =
      role === 'scanner'
        ? await startScanner({ ...deps, options: scannerOptionsFrom(config) })
        : role === 'producer'
          ? await startProducer({ ...deps, kafka, options: producerOptionsFrom(config) })
          : await startArchiver({
              options: archiverOptionsFrom(config),
              kafka: createKafka(config, logger, 'archiver'),
              storage: openArchiveStorage(config),
              logger,
              settings: settingsStore,
            });
    running.push({ stop: () => r.stop() });
  }
  process.stdout.write(
    `${JSON.stringify({ ready: true, pid: process.pid, roles, ownerId: ownerId ?? null })}\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(
    `pipeline-process failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  exitAfterOutput(1);
});
