import type { Kafka } from 'kafkajs';
import type { TtlstreamConfig } from '../core/config';
import type { Logger } from '../core/logger';
import { AdminClient } from './group/admin';
import { DeadLetters } from './group/dead-letters';
import { GroupConsumer } from './group/consumer';
import { withDefaults, type ArchiverOptions, type ResolvedOptions } from './group/defaults';
import { LeavingClients } from './group/leaving';
import { Monitor } from './group/monitor';
import { OffsetManager } from './group/offsets';
import { Recovery } from './group/recovery';
import { BatchRunner } from './group/runner';
import { PartitionSlots } from './group/slots';
import { newGroupState, type GroupState } from './group/state';
import { LossReporter } from './loss';
import type { ArchiveStorage } from './storage/types';
import { controlTableSettings } from './control-settings';
import { parquetEncodingPool } from './format';
import { cachedTtlSettings, type TtlSettingsOf } from './ttl-settings';

export type { ArchiverOptions } from './group/defaults';
export { streamTopicFilter } from './group/topics';

export interface ArchiverDeps {
  config: TtlstreamConfig;
  kafka: Kafka;
  storage: ArchiveStorage;
  logger: Logger;
  options?: ArchiverOptions;
  /**
   * Tables' TTL settings for Parquet's expired_at and ttl_mode; default: the control table's
   * (read only when archive.format is parquet).
   */
  ttlSettings?: TtlSettingsOf;
}

/**
 * One archiver member of the consumer group. It only wires the parts (group/) together and runs
 * their timers; see archiver/README.md for what each part does.
 */
export class Archiver {
  private readonly config: TtlstreamConfig;
  private readonly storage: ArchiveStorage;
  private readonly log: Logger;
  private readonly opts: ResolvedOptions;
  private readonly state: GroupState = newGroupState();
  private readonly leaving = new LeavingClients();
  private readonly admin: AdminClient;
  /** The dead-letter producer; replaced at its first request timeout, like the consumer and the admin client. */
  private readonly deadLetters: DeadLetters;
  private readonly slots: PartitionSlots;
  private readonly watch: Monitor;
  private readonly loss: LossReporter;
  private readonly group: GroupConsumer;
  private timers: NodeJS.Timeout[] = [];
  /** The control table's client, when this member made one for the TTL settings. */
  private settingsClient: { destroy(): void } | null = null;

  constructor(deps: ArchiverDeps) {
    const { config, kafka, storage } = deps;
    this.config = config;
    this.storage = storage;
    const log = deps.logger.child({ component: 'archiver' });
    this.log = log;
    const opts = withDefaults(deps.options);
    this.opts = opts;
    const state = this.state;
    const loss = new LossReporter(storage, log);
    this.loss = loss;
    const admin = new AdminClient(kafka, log, this.leaving);
    this.admin = admin;
    this.deadLetters = new DeadLetters(kafka, log, config.topics.deadLetter, this.leaving);
    const offsets = new OffsetManager(config.archive.groupId, admin, state);
    const recovery = new Recovery({
      config,
      storage,
      log,
      opts,
      state,
      admin,
      offsets,
      loss,
      ttlSettings: this.ttlSettingsOf(deps, log),
    });
    const slots = new PartitionSlots(log, recovery);
    this.slots = slots;
    this.watch = new Monitor(config, log, state, admin, slots, loss);
    const runner = new BatchRunner(log, state, slots, admin, loss, this.deadLetters);
    this.group = new GroupConsumer({
      config,
      kafka,
      log,
      opts,
      state,
      admin,
      slots,
      runner,
      leaving: this.leaving,
    });
  }

  /** What Parquet files take their TTL columns from; Avro files carry none. */
  private ttlSettingsOf(deps: ArchiverDeps, log: Logger): TtlSettingsOf {
    if (deps.ttlSettings) return deps.ttlSettings;
    if (deps.config.archive.format !== 'parquet') return async () => null;
    const settings = controlTableSettings(deps.config);
    this.settingsClient = settings;
    return cachedTtlSettings(settings.source, log);
  }

  async start(): Promise<void> {
    // Loaded and compiled while the consumer joins its group, not in the first roll; a thread that fails here fails
    // its first real file too, and the roll is retried with a new one.
    if (this.config.archive.format === 'parquet')
      parquetEncodingPool
        .warm()
        .catch((err: unknown) => this.log.warn({ err }, 'Parquet encoding thread failed'));
    await this.admin.connect();
    await this.deadLetters.connect();
    await this.admin.ensureDeadLetterTopic(this.config.topics);
    await this.group.refreshTopics();
    const rollTick = Math.max(50, Math.min(1000, Math.floor(this.config.archive.rollMs / 4)));
    this.timers.push(setInterval(() => this.slots.rollDue(), rollTick));
    this.timers.push(setInterval(() => void this.monitor(), this.opts.monitorIntervalMs));
    // The loss alert from the archive's loss records and acknowledgements, at once and on the monitor's cadence.
    void this.loss.refresh();
    this.timers.push(setInterval(() => void this.loss.refresh(), this.opts.monitorIntervalMs));
    this.timers.push(setInterval(() => void this.group.refreshTopics(), this.opts.topicRefreshMs));
    for (const t of this.timers) t.unref();
    this.log.info(
      { archive: this.storage.root, topics: this.group.topics, groupId: this.config.archive.groupId },
      'archiver started',
    );
  }

  /** Graceful stop: no new fetches, roll and write what is buffered, commit, leave the group. */
  async stop(): Promise<void> {
    if (this.state.stopped) return;
    this.state.stopped = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.group.stop();
    await this.deadLetters.disconnect();
    await this.admin.close();
    await this.leaving.settle(this.opts.stopTimeoutMs);
    this.settingsClient?.destroy();
    this.log.info('archiver stopped');
  }

  /** Run one watermark check now (tests and the CLI's status use it; the timer calls it too). */
  async monitor(): Promise<void> {
    await this.watch.run();
  }
}
