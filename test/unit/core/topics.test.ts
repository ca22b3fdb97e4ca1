import { parseConfig, type ConfigInput } from '../../../core/config';
import { ConfigError, ValidationError } from '../../../core/errors';
import {
  DEAD_LETTER_RETENTION_MS,
  declaredTopics,
  streamTopicFor,
  validateTopicName,
} from '../../../core/topics';

const config = (topics: ConfigInput['topics'] = {}) => parseConfig({ topics });
const entries = (spec: { configEntries: Array<{ name: string; value: string }> }) =>
  Object.fromEntries(spec.configEntries.map((e) => [e.name, e.value]));

describe('declaredTopics', () => {
  it('declares the shared stream topic and the dead-letter topic with the configured durability', () => {
    const specs = declaredTopics(config(), ['orders', 'sessions']);
    expect(specs.map((s) => s.topic)).toEqual(['ttlstream.remove', 'ttlstream.dead-letter']);
    const [stream, dead] = specs;
    expect(stream).toMatchObject({ numPartitions: 6, replicationFactor: 1 });
    expect(entries(stream!)).toEqual({
      'cleanup.policy': 'delete',
      'retention.ms': '86400000',
      'min.insync.replicas': '1',
      'unclean.leader.election.enable': 'false',
    });
    expect(entries(dead!)).toEqual({
      'cleanup.policy': 'delete',
      'retention.ms': String(DEAD_LETTER_RETENTION_MS),
      'min.insync.replicas': '1',
      'unclean.leader.election.enable': 'false',
    });
    expect(DEAD_LETTER_RETENTION_MS).toBe(604_800_000);
  });

  it('follows the topics settings', () => {
    const specs = declaredTopics(
      config({
        shared: 'remove-all',
        deadLetter: 'dlq',
        partitions: 12,
        replicationFactor: 3,
        minInsyncReplicas: 2,
        retentionMs: 3_600_000,
      }),
    );
    expect(specs.map((s) => [s.topic, s.numPartitions, s.replicationFactor])).toEqual([
      ['remove-all', 12, 3],
      ['dlq', 12, 3],
    ]);
    expect(entries(specs[0]!)).toEqual({
      'cleanup.policy': 'delete',
      'retention.ms': '3600000',
      'min.insync.replicas': '2',
      'unclean.leader.election.enable': 'false',
    });
  });

  it('declares one stream topic per table with per-table naming, each table once', () => {
    const specs = declaredTopics(config({ naming: 'per-table' }), ['orders', 'sessions', 'orders']);
    expect(specs.map((s) => s.topic)).toEqual([
      'ttlstream.remove.orders',
      'ttlstream.remove.sessions',
      'ttlstream.dead-letter',
    ]);
  });

  it('declares only the dead-letter topic with per-table naming and no tables yet', () => {
    expect(declaredTopics(config({ naming: 'per-table' })).map((s) => s.topic)).toEqual([
      'ttlstream.dead-letter',
    ]);
  });

  it('refuses min.insync.replicas above the replication factor, naming both settings', () => {
    expect(() => declaredTopics(config({ replicationFactor: 1, minInsyncReplicas: 2 }))).toThrow(ConfigError);
    expect(() => declaredTopics(config({ replicationFactor: 1, minInsyncReplicas: 2 }))).toThrow(
      /TTLSTREAM_TOPICS_MIN_INSYNC_REPLICAS.*TTLSTREAM_TOPICS_REPLICATION_FACTOR/,
    );
  });

  it('refuses table names that would make topics colliding in Kafka', () => {
    expect(() => declaredTopics(config({ naming: 'per-table' }), ['my.table', 'my_table'])).toThrow(
      ValidationError,
    );
    expect(() => declaredTopics(config({ naming: 'per-table' }), ['my.table', 'my_table'])).toThrow(
      /"ttlstream.remove.my.table" and "ttlstream.remove.my_table" collide/,
    );
  });

  it('refuses a dead-letter topic equal to the stream topic', () => {
    expect(() => declaredTopics(config({ shared: 'same', deadLetter: 'same' }))).toThrow(/declared twice/);
  });

  it('refuses a per-table topic name longer than Kafka allows', () => {
    expect(() => declaredTopics(config({ naming: 'per-table' }), ['t'.repeat(240)])).toThrow(
      /1 to 249 characters/,
    );
  });
});

describe('streamTopicFor', () => {
  it('maps every table to the shared topic, or to its own with per-table naming', () => {
    expect(streamTopicFor(config(), 'orders')).toBe('ttlstream.remove');
    expect(streamTopicFor(config({ naming: 'per-table', perTablePrefix: 'ttl-' }), 'orders')).toBe(
      'ttl-orders',
    );
  });
});

describe('validateTopicName', () => {
  it.each(['a', 'ttlstream.remove', 'x_y-z.0', 'a'.repeat(249)])('accepts %s', (name) => {
    expect(() => validateTopicName(name)).not.toThrow();
  });
  it.each(['', '.', '..', 'has space', 'slash/no', 'ünïcode', 'a'.repeat(250)])('refuses "%s"', (name) => {
    expect(() => validateTopicName(name)).toThrow(ValidationError);
  });
});
