import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { MiddlewareStack } from '@smithy/types';
import type { Kafka } from 'kafkajs';
import {
  chooseStackEndpoints,
  configSources,
  loadConfig,
  requireArchiveUrl,
  type ConfigInput,
  type ConfigSource,
  type LoadConfigOptions,
  type TtlstreamConfig,
} from '../../core/config';
import type { Logger } from '../../core/logger';
import type { TtlSettingsStore } from '../../control/settings-store';
import type { CliIo } from './io';
import { createProgress, type Progress } from './progress';
import { explainServiceError, tagServiceErrors } from './service-errors';
import { InternalError, ServiceError } from '../../core/errors';
import { KafkaSetupError, plaintextAtTlsListener, speaksTls } from './kafka-errors';
import { readEnvFile } from './env-file';

/**
 * What only a command that reaches a service needs: the service clients (the AWS SDK, kafkajs, prom-client), the
 * logger (pino), the settings store, Kafka's security and the endpoints line, together about 0.2 s of start-up.
 * They are required on first use, not with the context, so a command that calls no service (`archive query` on a
 * file archive, `config`, `schemas`) never loads them (bench/README.md, archive-query). Synchronous requires keep
 * the getters synchronous; `typeof import()` keeps them typed (test/unit/cli/startup.test.ts).
 */
/* eslint-disable @typescript-eslint/no-require-imports */
const deferred = {
  clients: (): typeof import('../../core/clients') => require('../../core/clients'),
  logger: (): typeof import('../../core/logger') => require('../../core/logger'),
  settingsStore: (): typeof import('../../control/settings-store') => require('../../control/settings-store'),
  kafkaSecurity: (): typeof import('../../core/kafka-security') => require('../../core/kafka-security'),
  endpointsNote: (): typeof import('./endpoints-note') => require('./endpoints-note'),
};
/* eslint-enable @typescript-eslint/no-require-imports */

/** Options every command accepts (declared on the root program). */
export interface GlobalOptions {
  config?: string;
  logLevel?: string;
  endpointUrl?: string;
  region?: string;
  brokers?: string;
  /** The local stack's folder (its endpoints.json), over TTLSTREAM_LOCAL_STACK. */
  localStack?: string;
  /** No informational lines on stderr (the endpoints in use). */
  quiet?: boolean;
  /** `--env-file` of the commands that read a deployment's settings (iam-policy, config): NAME=VALUE lines. */
  envFile?: string;
}

/** The connection flags every command takes, as configuration overrides (they win over env and files). */
export function connectionOverrides(g: GlobalOptions): ConfigInput {
  return {
    ...(g.endpointUrl !== undefined ? { dynamodb: { endpoint: g.endpointUrl } } : {}),
    ...(g.region !== undefined ? { region: g.region } : {}),
    ...(g.brokers !== undefined
      ? {
          kafka: {
            brokers: g.brokers
              .split(',')
              .map((b) => b.trim())
              .filter((b) => b.length > 0),
          },
        }
      : {}),
  };
}

/** Calls `announce` before the client's first request (creating a client sends nothing). */
function announceBeforeFirstRequest<I extends object, O extends object>(
  client: { middlewareStack: MiddlewareStack<I, O> },
  announce: () => void,
): void {
  client.middlewareStack.add(
    (next) => (args) => {
      announce();
      return next(args);
    },
    { step: 'initialize', name: 'ttlstreamAnnounceEndpoints' },
  );
}

/** The broker of a Kafka "Closed connection" in an error chain, if that is what it is. */
function closedBroker(err: unknown): string | undefined {
  for (let e = err, depth = 0; e !== null && typeof e === 'object' && depth < 8; depth++) {
    const x = e as { name?: string; broker?: unknown; cause?: unknown; originalError?: unknown };
    if (x.name === 'KafkaJSConnectionClosedError' && typeof x.broker === 'string') return x.broker;
    e = x.originalError ?? x.cause;
  }
  return undefined;
}

/**
 * What a command needs from the outside world, created on first use so `--help` and usage errors
 * never touch configuration or services, and closed once at the end of the command.
 */
export class CliContext {
  private cachedConfig: TtlstreamConfig | undefined;
  private cachedLogger: Logger | undefined;
  private cachedDdb: DynamoDBClient | undefined;
  private cachedS3: S3Client | undefined;
  private cachedStreams: DynamoDBStreamsClient | undefined;
  private readonly kafkas = new Map<string, Kafka>();
  private cachedStore: TtlSettingsStore | undefined;
  private bar: Progress | undefined;
  private interruptSummary: ((signal: NodeJS.Signals) => void) | undefined;
  private readonly stopping = new AbortController();

  constructor(
    readonly io: CliIo,
    readonly globals: GlobalOptions,
    /** One-shot commands log at warn unless asked, so their stderr stays readable; `run` logs at the configured level. */
    private readonly longRunning = false,
    private readonly overrides: ConfigInput = {},
    private readonly quietLevel = 'warn',
  ) {}

  /** Loads and validates the configuration; throws ConfigError naming the setting. */
  get config(): TtlstreamConfig {
    this.cachedConfig ??= loadConfig(this.loadOptions());
    return this.cachedConfig;
  }

  /** Where each setting of `config` comes from (`ttlstream config`). */
  configSources(): Map<string, ConfigSource> {
    return configSources(this.loadOptions());
  }

  /**
   * `ttlstream run` with the archiver role: the built-in archive.url is refused outside a local stack
   * (requireArchiveUrl), before anything is contacted.
   */
  requireArchiveUrl(): void {
    requireArchiveUrl(this.loadOptions());
  }

  private readonly warned = new Set<string>();

  /** A warning about the configuration, once per command however often it is read. */
  private warnOnce(message: string): void {
    if (this.warned.has(message)) return;
    this.warned.add(message);
    const line = `ttlstream: warning: ${message}\n`;
    if (this.bar) this.bar.log(line);
    else this.io.stderr.write(line);
  }

  private cachedEnv: NodeJS.ProcessEnv | undefined;

  /** The environment the configuration is read from: the process's, with `--env-file`'s variables over it. */
  private get settingsEnv(): NodeJS.ProcessEnv {
    this.cachedEnv ??=
      this.globals.envFile === undefined
        ? this.io.env
        : { ...this.io.env, ...readEnvFile(this.globals.envFile, this.io.cwd) };
    return this.cachedEnv;
  }

  private loadOptions(): LoadConfigOptions {
    const overrides: Record<string, unknown> = { ...this.overrides };
    if (this.globals.logLevel) overrides.log = { level: this.globals.logLevel };
    return {
      env: this.settingsEnv,
      cwd: this.io.cwd,
      onWarning: (message) => this.warnOnce(message),
      overrides: overrides as ConfigInput,
      ...(this.globals.config ? { file: this.globals.config } : {}),
      ...(this.globals.localStack !== undefined ? { localStack: this.globals.localStack } : {}),
    };
  }

  /**
   * A command that brought up the local stack itself (the demo) uses it: as `--local-stack <dir>`, unless the
   * command line named one. Only before any client is made; a configuration read before (for the log level) is
   * read again.
   */
  useLocalStack(dir: string): void {
    if (this.cachedDdb || this.cachedS3 || this.kafkas.size > 0 || this.cachedStore)
      throw new InternalError('useLocalStack after a service client was made');
    if (this.globals.localStack !== undefined) return;
    this.globals.localStack = dir;
    this.cachedConfig = undefined;
  }

  private announced = false;

  /**
   * Once per command, before its first request: which endpoints it uses and where they came from, and an
   * endpoints file of a local stack that lies here unused (one line each, on stderr, so stdout stays data).
   * `--quiet` or TTLSTREAM_QUIET=1 turns them off.
   */
  announceEndpoints(): void {
    if (this.announced) return;
    this.announced = true;
    const quietEnv = this.settingsEnv.TTLSTREAM_QUIET;
    if (this.globals.quiet || quietEnv === '1' || quietEnv === 'true') return;
    const config = this.config;
    const choice = chooseStackEndpoints({
      env: this.settingsEnv,
      cwd: this.io.cwd,
      ...(this.globals.localStack !== undefined ? { localStack: this.globals.localStack } : {}),
    });
    const { endpointsLine, ignoredEndpointsNote } = deferred.endpointsNote();
    const lines = [endpointsLine(config, this.configSources(), choice, this.io.cwd, this.settingsEnv)];
    const note = ignoredEndpointsNote(choice, this.io.cwd);
    if (note) lines.push(note);
    for (const line of lines) {
      if (this.bar) this.bar.log(line + '\n');
      else this.io.stderr.write(line + '\n');
    }
  }

  private get explicitLogLevel(): boolean {
    return this.globals.logLevel !== undefined || this.settingsEnv.TTLSTREAM_LOG_LEVEL !== undefined;
  }

  get logger(): Logger {
    if (!this.cachedLogger) {
      const level = this.longRunning || this.explicitLogLevel ? this.config.log.level : this.quietLevel;
      const { createLogger, stderrDestination } = deferred.logger();
      const stderr = this.io.stderr === process.stderr ? stderrDestination(process.stderr) : this.io.stderr;
      // While a progress bar is drawn, a log line (a kafkajs warning) goes above it, not into it.
      const write = (line: string): void => {
        if (this.bar) this.bar.log(line);
        else stderr.write(line);
      };
      this.cachedLogger = createLogger({ level, destination: { write } });
    }
    return this.cachedLogger;
  }

  get ddb(): DynamoDBClient {
    if (!this.cachedDdb) {
      this.cachedDdb = deferred.clients().createDynamoClient(this.config);
      tagServiceErrors(this.cachedDdb, 'dynamodb');
      announceBeforeFirstRequest(this.cachedDdb, () => this.announceEndpoints());
    }
    return this.cachedDdb;
  }

  /** The streams role's DynamoDB Streams client (core/clients.ts createStreamsClient). */
  get streamsClient(): DynamoDBStreamsClient {
    if (!this.cachedStreams) {
      this.cachedStreams = deferred.clients().createStreamsClient(this.config);
      tagServiceErrors(this.cachedStreams, 'dynamodb-streams');
      announceBeforeFirstRequest(this.cachedStreams, () => this.announceEndpoints());
    }
    return this.cachedStreams;
  }

  get s3(): S3Client {
    if (!this.cachedS3) {
      this.cachedS3 = deferred.clients().createS3Client(this.config);
      tagServiceErrors(this.cachedS3, 's3');
      announceBeforeFirstRequest(this.cachedS3, () => this.announceEndpoints());
    }
    return this.cachedS3;
  }

  /**
   * A connection failure named with its service and setting (see service-errors.ts), else the error itself. A
   * Kafka broker that closed a plaintext connection at once is asked for a TLS handshake: a TLS listener is a
   * setting to change (exit 2), not an outage.
   */
  async explain(err: unknown): Promise<unknown> {
    if (!this.cachedConfig) return err;
    const explained = explainServiceError(err, this.cachedConfig);
    if (explained instanceof ServiceError && this.cachedConfig.kafka.ssl === false) {
      const closed = closedBroker(err);
      if (closed !== undefined && (await speaksTls(closed))) return plaintextAtTlsListener(closed);
    }
    return explained ?? err;
  }

  /**
   * Before long-running roles start: one connection (with its TLS handshake and SASL login) to each broker, without
   * retries, so a setting that can never work (a wrong password, an untrusted certificate, TLS on one side only)
   * stops the start in seconds with one line (exit 2) instead of retries until the roles give up. A broker that is
   * merely down is left to the roles, which wait for it as before.
   */
  async checkKafka(): Promise<void> {
    const config = this.config;
    this.prepareKafka();
    const failures = await Promise.all(
      config.kafka.brokers.map(async (broker) => {
        const probe = deferred
          .clients()
          .createKafka(config, this.logger.child({}, { level: 'fatal' }), 'preflight', { retries: 0 }, [
            broker,
          ])
          .admin();
        try {
          await probe.connect();
          return undefined;
        } catch (err) {
          return err;
        } finally {
          await probe.disconnect().catch(() => undefined);
        }
      }),
    );
    for (const failure of failures) {
      if (failure === undefined) continue;
      const explained = await this.explain(failure);
      if (explained instanceof KafkaSetupError) throw explained;
    }
  }

  get settingsStore(): TtlSettingsStore {
    if (!this.cachedStore) {
      const { TtlSettingsStore, settingsStoreOptionsFrom } = deferred.settingsStore();
      this.cachedStore = new TtlSettingsStore(this.ddb, settingsStoreOptionsFrom(this.config));
    }
    return this.cachedStore;
  }

  /** The command's progress bar; logs are written above it while it is shown. */
  progress(label: string, options: { json?: boolean } = {}): Progress {
    const p = createProgress(this.io, label, options);
    if (p.active) this.bar = p;
    const stop = p.stop.bind(p);
    p.stop = () => {
      stop();
      if (this.bar === p) this.bar = undefined;
    };
    return p;
  }

  /** What a long command prints when SIGINT/SIGTERM stops it: what was done so far, whether a rerun is safe. */
  onInterrupt(summary: (signal: NodeJS.Signals) => void): void {
    this.interruptSummary = summary;
  }

  /**
   * Aborted when the command is interrupted (a signal, or stdout's reader gone): a loop over files or indexes passes
   * it down and stops between two of them, each done whole or not at all.
   */
  get stopSignal(): AbortSignal {
    return this.stopping.signal;
  }

  /** Called by the action wrapper on a signal: the terminal first, then the summary, and no more logs. */
  interrupted(signal: NodeJS.Signals): void {
    this.stopping.abort();
    this.bar?.stop();
    if (this.cachedLogger) this.cachedLogger.level = 'silent';
    if (this.interruptSummary) this.interruptSummary(signal);
    // A reader that left (`| head -1`) asked for no more: the command ends quietly.
    else if (signal !== 'SIGPIPE') this.io.stderr.write(`ttlstream: interrupted (${signal})\n`);
  }

  /** Recorded as `changedBy` for changes made from the command line. */
  get operator(): string {
    const user = this.io.env.USER ?? this.io.env.LOGNAME ?? 'unknown';
    return `cli:${user}`;
  }

  /**
   * Before the first Kafka client: the endpoints line, the TLS files read and checked (ConfigError naming the
   * setting), and what is unsafe about the settings said, at every start.
   */
  private prepareKafka(): void {
    // kafkajs connects on first use, which a command only reaches once its input was checked.
    this.announceEndpoints();
    const security = deferred.kafkaSecurity().kafkaSecurity(this.config);
    if (!security.warned) {
      security.warned = true;
      for (const w of security.warnings) this.io.stderr.write(`ttlstream: warning: ${w}\n`);
    }
  }

  /** kafkajs clients are cheap; one per role keeps client ids (and broker-side quotas/logs) distinct. */
  kafka(role = 'cli'): Kafka {
    let k = this.kafkas.get(role);
    if (!k) {
      this.prepareKafka();
      // One-shot commands: two quick attempts, and kafkajs's own connection errors (a JSON line per
      // retry) stay below the one line the command prints, unless a log level was asked for.
      const { createKafka } = deferred.clients();
      k = this.longRunning
        ? createKafka(this.config, this.logger, role)
        : createKafka(
            this.config,
            this.explicitLogLevel ? this.logger : this.logger.child({}, { level: 'fatal' }),
            role,
            { retries: 1, initialRetryTime: 300, maxRetryTime: 1000 },
          );
      this.kafkas.set(role, k);
    }
    return k;
  }

  /** Close what was opened. Kafka producers/consumers are owned and disconnected by their users. */
  async close(): Promise<void> {
    this.cachedDdb?.destroy();
    this.cachedS3?.destroy();
    this.cachedStreams?.destroy();
    this.cachedDdb = undefined;
    this.cachedS3 = undefined;
    this.cachedStreams = undefined;
    const logger = this.cachedLogger;
    if (logger) await new Promise<void>((resolve) => logger.flush(() => resolve()));
  }
}
