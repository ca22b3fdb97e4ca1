/**
 * A bare archiver process: `npx tsx archiver/main.ts`. Configuration comes from the usual places
 * (TTLSTREAM_* variables, $TTLSTREAM_CONFIG, the local stack's endpoints file when TTLSTREAM_LOCAL_STACK names it). SIGTERM/SIGINT stop
 * it gracefully. The CLI's `ttlstream run --roles archiver` is the production entry; this one is
 * what crash tests spawn and kill.
 */
import { settingsOnFirstRead } from '../control/settings-store';
import { createKafka } from '../core/clients';
import { loadConfig, requireArchiveUrl } from '../core/config';
import { ConfigError } from '../core/errors';
import { createLogger } from '../core/logger';
import { startArchiver } from './index';
import { archiverOptionsFrom } from './options';
import { openArchiveStorage } from '../archive/storage';
import { exitAfterOutput } from '../core/exit';

async function main(): Promise<void> {
  // A setting under an old name is said once, as `ttlstream run` says it.
  const warned = new Set<string>();
  const onWarning = (message: string): void => {
    if (!warned.has(message)) process.stderr.write(`archiver: warning: ${message}\n`);
    warned.add(message);
  };
  const config = loadConfig({ onWarning });
  requireArchiveUrl({ onWarning });
  const logger = createLogger({ level: config.log.level, name: 'ttlstream-archiver' });
  const kafka = createKafka(config, logger, 'archiver');
  const storage = openArchiveStorage(config);
  const settings = settingsOnFirstRead(config);
  const archiver = await startArchiver({
    options: archiverOptionsFrom(config),
    kafka,
    storage,
    logger,
    settings,
  });
  process.stdout.write('archiver ready\n');
  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    archiver.stop().then(
      () => {
        settings.destroy();
        exitAfterOutput(0);
      },
      (err: unknown) => {
        logger.error({ err }, 'stop failed');
        exitAfterOutput(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  // A setting is one line and exit 2, as from `ttlstream run`; anything else keeps its stack for the test's log.
  if (err instanceof ConfigError) {
    process.stderr.write(`archiver: ${err.message}\n`);
    return exitAfterOutput(2);
  }
  process.stderr.write(`archiver: ${(err as Error).stack ?? String(err)}\n`);
  exitAfterOutput(1);
});
