import { apiOptionsFrom, buildApiServer } from '../../control/api/server';
import { startArchiver } from '../../archiver';
import { archiverOptionsFrom } from '../../archiver/options';
import { openArchiveStorage } from '../../archive/storage';
import { collectProcessMetrics, registry } from '../../core/metrics';
import { defaultOwnerId } from '../../core/leases';
import { producerOptionsFrom, startProducer } from '../../producer';
import { scannerOptionsFrom, startScanner } from '../../scanner';
import { ArchiveStreamLosses, startStreams, streamsOptionsFrom } from '../../streams';
import type { CliContext } from '../kit/context';
import { formatDuration } from '../kit/duration';
import { startMetricsServer } from './metrics-server';
import { RoleStartError, startRoles, type RoleName, type RoleStarter } from '../kit/run-roles';
import { ShutdownCoordinator } from '../kit/shutdown';

/** What `ttlstream run` does, loaded only when it runs (the roles pull in every service SDK). */

export interface RunFlags {
  roles: RoleName[];
  shutdownTimeout: number;
}

/** The real roles, built from the context's configuration and clients. */
export function roleStarters(ctx: CliContext, ownerId: string): Record<RoleName, RoleStarter> {
  const { config, logger } = ctx;
  const pipelineDeps = (role: string) => ({
    ddb: ctx.ddb,
    settingsStore: ctx.settingsStore,
    logger: logger.child({ role }),
    ownerId,
  });
  return {
    api: async () => {
      const app = buildApiServer({
        options: apiOptionsFrom(config),
        ddb: ctx.ddb,
        store: ctx.settingsStore,
        logger: logger.child({ role: 'api' }),
      });
      await app.listen({ host: config.api.host, port: config.api.port });
      return { stop: () => app.close() };
    },
    scanner: () => startScanner({ ...pipelineDeps('scanner'), options: scannerOptionsFrom(config) }),
    producer: () =>
      startProducer({
        ...pipelineDeps('producer'),
        kafka: ctx.kafka('producer'),
        options: producerOptionsFrom(config),
      }),
    archiver: () =>
      startArchiver({
        options: archiverOptionsFrom(config),
        kafka: ctx.kafka('archiver'),
        storage: openArchiveStorage(config, config.archive.url.startsWith('s3://') ? ctx.s3 : undefined),
        logger: logger.child({ role: 'archiver' }),
        // Read at the first purge that needs a table's retention: the store (and its client) made then.
        settings: { describe: (table) => ctx.settingsStore.describe(table) },
      }),
    streams: () =>
      startStreams({
        ...pipelineDeps('streams'),
        streams: ctx.streamsClient,
        kafka: ctx.kafka('streams'),
        // Losses go to the archive's loss ledger, beside the archiver's.
        losses: new ArchiveStreamLosses(
          openArchiveStorage(config, config.archive.url.startsWith('s3://') ? ctx.s3 : undefined),
          logger.child({ role: 'streams' }),
        ),
        options: streamsOptionsFrom(config),
      }),
  };
}

/** `ttlstream run`: one process with the chosen roles, until SIGTERM/SIGINT. */
export async function runRoles(
  ctx: CliContext,
  flags: RunFlags,
  starters: Record<RoleName, RoleStarter> = roleStarters(
    ctx,
    // A restart on the same machine takes a SIGKILLed predecessor's leases at once (decision 0020); a stable
    // instanceId does the same from any machine (decision 0006).
    ctx.config.instanceId ?? defaultOwnerId(),
  ),
): Promise<number> {
  const { config, logger } = ctx;
  const print = (line: string): void => void ctx.io.stderr.write(line + '\n');
  const coordinator = new ShutdownCoordinator({ timeoutMs: flags.shutdownTimeout, print, logger });
  coordinator.install();
  const onFatal = (err: unknown): void => {
    logger.fatal({ err }, 'uncaught error; shutting down');
    print(`ttlstream: unexpected error, shutting down: ${(err as Error)?.message ?? String(err)}`);
    void coordinator.shutdown('uncaught error', 1);
  };
  process.on('uncaughtException', onFatal);
  process.on('unhandledRejection', onFatal);
  try {
    collectProcessMetrics();
    // Registered first, so closed last: every role has stopped using the clients by then.
    coordinator.add('clients', () => ctx.close());
    // A forgotten archive.url would archive into the container's /tmp: refused before anything starts.
    // The streams role records what left a stream unread in the archive's loss ledger.
    if (flags.roles.includes('archiver') || flags.roles.includes('streams')) ctx.requireArchiveUrl();
    // A setting that can never work (login, certificate, TLS on one side only) stops the start here, in seconds.
    if (flags.roles.some((r) => r !== 'api')) await ctx.checkKafka();
    // Ready (the metrics port's /readyz) once every role has started, until the stop begins.
    let rolesUp = false;
    if (!flags.roles.includes('api') && config.metrics.port !== undefined) {
      const server = await startMetricsServer(registry, config.api.host, config.metrics.port, {
        ready: () => rolesUp && !coordinator.isShuttingDown,
      });
      coordinator.add('metrics', server.stop);
    }
    try {
      const started = await startRoles(flags.roles, starters, coordinator, logger);
      rolesUp = started.length > 0;
      if (started.length > 0) {
        print(
          `ttlstream: running ${started.join(', ')} (pid ${process.pid}); SIGTERM or Ctrl-C stops gracefully within ${formatDuration(flags.shutdownTimeout)}`,
        );
      }
    } catch (err) {
      if (!(err instanceof RoleStartError)) throw err;
      await coordinator.done;
      throw err;
    }
    return await coordinator.done;
  } finally {
    process.off('uncaughtException', onFatal);
    process.off('unhandledRejection', onFatal);
    coordinator.uninstall();
  }
}
