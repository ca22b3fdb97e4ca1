import { ConfigResourceTypes, type Admin } from 'kafkajs';
import { createKafka } from '../../../core/clients';
import { applyTopics, declaredTopics } from '../../../core/topics';
import { createTestTopic, testConfig, uniqueName } from '../../support/stack';
import { waitFor } from '../../support/wait-for';

/** applyTopics against the real broker: creates, converges settings, leaves the rest alone. */
describe('applyTopics (real broker)', () => {
  const kafka = createKafka(testConfig(), undefined, 'topics-test');
  let admin: Admin;
  const made: string[] = [];

  const topicConfig = async (topic: string): Promise<Record<string, string>> => {
    const out = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }],
    });
    return Object.fromEntries(out.resources[0]!.configEntries.map((e) => [e.configName, e.configValue]));
  };
  const partitions = async (topic: string): Promise<number> =>
    (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0]!.partitions.length;
  const topicsConfig = (
    overrides: {
      shared?: string;
      deadLetter?: string;
      naming?: 'shared' | 'per-table';
      perTablePrefix?: string;
    } = {},
  ) => {
    const shared = overrides.shared ?? uniqueName('stream');
    const deadLetter = overrides.deadLetter ?? uniqueName('dlq');
    made.push(shared, deadLetter);
    return testConfig({ topics: { ...overrides, shared, deadLetter, partitions: 4 } });
  };

  beforeAll(async () => {
    admin = kafka.admin();
    await admin.connect();
  });

  afterAll(async () => {
    const existing = new Set(await admin.listTopics());
    const mine = made.filter((t) => existing.has(t));
    if (mine.length > 0) await admin.deleteTopics({ topics: mine });
    await admin.disconnect();
  });

  it('creates the declared topics with their settings, then finds nothing to do', async () => {
    const config = topicsConfig();
    const specs = declaredTopics(config);

    const first = await applyTopics(admin, specs);
    expect(first).toEqual({
      created: [config.topics.shared, config.topics.deadLetter],
      altered: [],
      unchanged: [],
      partitionMismatches: [],
    });
    expect(await partitions(config.topics.shared)).toBe(4);
    expect(await topicConfig(config.topics.shared)).toMatchObject({
      'retention.ms': '86400000',
      'cleanup.policy': 'delete',
      'min.insync.replicas': '1',
      'unclean.leader.election.enable': 'false',
    });
    expect(await topicConfig(config.topics.deadLetter)).toMatchObject({
      'retention.ms': '604800000',
      'cleanup.policy': 'delete',
    });

    const second = await applyTopics(admin, specs);
    expect(second).toEqual({
      created: [],
      altered: [],
      unchanged: [config.topics.shared, config.topics.deadLetter],
      partitionMismatches: [],
    });
  });

  it('restores drifted declared settings and keeps overrides it does not declare', async () => {
    const config = topicsConfig();
    const specs = declaredTopics(config);
    await applyTopics(admin, specs);
    const topic = config.topics.shared;
    // An operator shortened retention (drift) and set segment.ms (not ours to manage).
    await admin.alterConfigs({
      validateOnly: false,
      resources: [
        {
          type: ConfigResourceTypes.TOPIC,
          name: topic,
          configEntries: [
            { name: 'retention.ms', value: '1000' },
            { name: 'cleanup.policy', value: 'delete' },
            { name: 'min.insync.replicas', value: '1' },
            { name: 'segment.ms', value: '60000' },
          ],
        },
      ],
    });
    // The broker applies an altered config from its metadata log a moment after answering: wait until it shows.
    await waitFor('the drifted settings to show', async () => {
      const c = await topicConfig(topic);
      return c['retention.ms'] === '1000' && c['segment.ms'] === '60000';
    });

    const result = await applyTopics(admin, specs);
    expect(result.altered).toEqual([topic]);
    expect(result.unchanged).toEqual([config.topics.deadLetter]);
    await waitFor(
      'the restored settings to show',
      async () => (await topicConfig(topic))['retention.ms'] === '86400000',
    );
    expect(await topicConfig(topic)).toMatchObject({
      'retention.ms': '86400000',
      'segment.ms': '60000',
      'cleanup.policy': 'delete',
    });
  });

  it('reports, and does not change, an existing topic with another partition count', async () => {
    const shared = uniqueName('stream');
    await createTestTopic(admin, shared, 2);
    const config = topicsConfig({ shared });
    const result = await applyTopics(admin, declaredTopics(config));
    expect(result.created).toEqual([config.topics.deadLetter]);
    expect(result.partitionMismatches).toEqual([{ topic: shared, declared: 4, actual: 2 }]);
    expect(await partitions(shared)).toBe(2);
    expect(await topicConfig(shared)).toMatchObject({ 'retention.ms': '86400000' });
  });

  it('creates per-table topics, and concurrent appliers agree without errors', async () => {
    const prefix = `${uniqueName('pt')}.`;
    const tables = ['orders', 'sessions'];
    made.push(...tables.map((t) => `${prefix}${t}`));
    const config = topicsConfig({ naming: 'per-table', perTablePrefix: prefix });
    const specs = declaredTopics(config, tables);

    const results = await Promise.all(
      [0, 1, 2].map(async () => {
        const own = kafka.admin();
        await own.connect();
        try {
          return await applyTopics(own, specs);
        } finally {
          await own.disconnect();
        }
      }),
    );
    // Every topic was created by exactly one applier; the others found it and left it as it was.
    for (const spec of specs) {
      expect(results.filter((r) => r.created.includes(spec.topic))).toHaveLength(1);
      expect(results.filter((r) => r.unchanged.includes(spec.topic))).toHaveLength(2);
    }
    const existing = await admin.listTopics();
    expect(existing).toEqual(expect.arrayContaining(specs.map((s) => s.topic)));
    expect(await topicConfig(`${prefix}orders`)).toMatchObject({ 'retention.ms': '86400000' });
  });
});
