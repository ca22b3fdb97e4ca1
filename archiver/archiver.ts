import type { Kafka } from 'kafkajs';
import type { Logger } from '../core/logger';
import { AdminClient } from './group/admin';
import { DeadLetters } from './group/dead-letters';
import { GroupConsumer } from './group/consumer';
import { LeavingClients } from './group/leaving';
import { Monitor } from './group/monitor';
import { OffsetManager } from './group/offsets';
import { Recovery } from './group/recovery';
import { BatchRunner } from './group/runner';
import { PartitionSlots } from './group/slots';
import { newGroupState, type GroupState } from './group/state';
import { LossReporter } from './loss';
import type { ArchiverOptions } from './options';
import type { SettingsSource } from '../archive/retention/resolve';
import type { ArchiveStorage } from '../archive/storage/types';
import { parquetEncodingPool } from '../archive/format';
import { cachedTtlSettings, type TtlSettingsOf } from './ttl-settings';

export { streamTopicFilter } from './group/topics';

export interface ArchiverDeps {
  /** Its slice of the configuration, resolved at start-up: `archiverOptionsFrom(config)`. */
  options: ArchiverOptions;
  kafka: Kafka;
  storage: ArchiveStorage;
  logger: Logger;
  /**
   * The tables' TTL settings (the control table), read by the parts that need them: each table's own archive
   * retention, and Parquet's expired_at and ttl_mode (read only when archive.format is parquet).
   */
  settings: SettingsSource;
}

/**
 * One archiver member of the consumer group. It only wires the parts (group/) together and runs
 * their timers; see archiver/README.md for what each part does.
 */
export class Archiver {
  private readonly storage: ArchiveStorage;
  private readonly log: Logger;
  private readonly opts: ArchiverOptions;
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

  constructor(deps: ArchiverDeps) {
    const { kafka, storage, options: opts } = deps;
    this.storage = storage;
    const log = deps.logger.child({ component: 'archiver' });
    this.log = log;
    this.opts = opts;
    const state = this.state;
    const loss = new LossReporter(storage, log);
    this.loss = loss;
    const admin = new AdminClient(kafka, log, this.leaving);
    this.admin = admin;
    this.deadLetters = new DeadLetters(kafka, log, opts.deadLetterTopic.deadLetter, this.leaving);
    const offsets = new OffsetManager(opts.groupId, admin, state);
    const recovery = new Recovery({
      storage,
      log,
      opts,
      state,
      admin,
      offsets,
      loss,
      ttlSettings: ttlSettingsFor(opts, deps.settings, log),
    });
    const slots = new PartitionSlots(log, recovery);
    this.slots = slots;
    this.watch = new Monitor(opts, log, state, admin, slots, loss);
    const runner = new BatchRunner(log, state, slots, admin, loss, this.deadLetters);
    this.group = new GroupConsumer({
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

  async start(): Promise<void> {
    // Loaded and compiled while the consumer joins its group, not in the first roll; a thread that fails here fails
    // its first real file too, and the roll is retried with a new one.
    if (this.opts.format === 'parquet')
      parquetEncodingPool
        .warm()
        .catch((err: unknown) => this.log.warn({ err }, 'Parquet encoding thread failed'));
    await this.admin.connect();
    await this.deadLetters.connect();
    await this.admin.ensureDeadLetterTopic(this.opts.deadLetterTopic);
    await this.group.refreshTopics();
    const rollTick = Math.max(50, Math.min(1000, Math.floor(this.opts.rollMs / 4)));
    this.timers.push(setInterval(() => this.slots.rollDue(), rollTick));
    this.timers.push(setInterval(() => void this.monitor(), this.opts.monitorIntervalMs));
    // The loss alert from the archive's loss records and acknowledgements, at once and on the monitor's cadence.
    void this.loss.refresh();
    this.timers.push(setInterval(() => void this.loss.refresh(), this.opts.monitorIntervalMs));
    this.timers.push(setInterval(() => void this.group.refreshTopics(), this.opts.topicRefreshMs));
    for (const t of this.timers) t.unref();
    this.log.info(
      { archive: this.storage.root, topics: this.group.topics, groupId: this.opts.groupId },
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
    this.log.info('archiver stopped');
  }

  /** Run one watermark check now (tests and the CLI's status use it; the timer calls it too). */
  async monitor(): Promise<void> {
    await this.watch.run();
  }
}

/** What Parquet files take their TTL columns from; Avro files carry none. */
function ttlSettingsFor(opts: ArchiverOptions, settings: SettingsSource, log: Logger): TtlSettingsOf {
  return opts.format === 'parquet' ? cachedTtlSettings(settings, log) : async () => null;
}
