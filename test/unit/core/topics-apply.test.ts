import { ConfigSource, type Admin, type DescribeConfigResponse, type IResourceConfig } from 'kafkajs';
import { parseConfig } from '../../../core/config';
import { applyTopics, declaredTopics } from '../../../core/topics';

/**
 * The timing-dependent path of applyTopics, made deterministic: a topic that another process
 * created a moment ago is not yet known to the broker answering describeConfigs. The real-broker
 * behaviour is covered by test/integration/smoke/topics.test.ts; this fixes the order of events.
 */
class RacingAdmin {
  unknownAnswersLeft: number;
  altered: IResourceConfig[] = [];
  constructor(unknownAnswers: number) {
    this.unknownAnswersLeft = unknownAnswers;
  }
  async listTopics(): Promise<string[]> {
    return [];
  }
  async createTopics(): Promise<boolean> {
    return false; // someone else won the race
  }
  async describeConfigs(req: { resources: Array<{ name: string }> }): Promise<DescribeConfigResponse> {
    if (this.unknownAnswersLeft-- > 0) {
      throw Object.assign(new Error('This server does not host this topic-partition'), {
        type: 'UNKNOWN_TOPIC_OR_PARTITION',
      });
    }
    return {
      throttleTime: 0,
      resources: req.resources.map((r) => ({
        resourceName: r.name,
        resourceType: 2,
        errorCode: 0,
        errorMessage: '',
        configEntries: [
          {
            configName: 'retention.ms',
            configValue: '1000',
            isDefault: false,
            configSource: ConfigSource.TOPIC_CONFIG,
            isSensitive: false,
            readOnly: false,
            configSynonyms: [],
          },
          {
            configName: 'cleanup.policy',
            configValue: 'delete',
            isDefault: true,
            configSource: ConfigSource.DEFAULT_CONFIG,
            isSensitive: false,
            readOnly: false,
            configSynonyms: [],
          },
          {
            configName: 'min.insync.replicas',
            configValue: '1',
            isDefault: true,
            configSource: ConfigSource.DEFAULT_CONFIG,
            isSensitive: false,
            readOnly: false,
            configSynonyms: [],
          },
        ],
      })),
    };
  }
  async fetchTopicMetadata(req: { topics: string[] }) {
    return {
      topics: req.topics.map((name) => ({
        name,
        partitions: Array.from({ length: 6 }, (_, i) => ({ partitionId: i })),
      })),
    };
  }
  async alterConfigs(req: { resources: IResourceConfig[] }): Promise<void> {
    this.altered.push(...req.resources);
  }
}

const specs = declaredTopics(parseConfig({ topics: { shared: 'race-stream', deadLetter: 'race-dlq' } }));

describe('applyTopics when another process has just created the topics', () => {
  it('waits until the broker knows them, then converges their settings', async () => {
    const admin = new RacingAdmin(3);
    const result = await applyTopics(admin as unknown as Admin, specs);
    expect(admin.unknownAnswersLeft).toBeLessThan(0);
    expect(result).toEqual({
      created: [],
      altered: ['race-stream', 'race-dlq'],
      unchanged: [],
      partitionMismatches: [],
    });
    expect(admin.altered.find((r) => r.name === 'race-stream')?.configEntries).toEqual(
      expect.arrayContaining([
        { name: 'retention.ms', value: '86400000' },
        { name: 'cleanup.policy', value: 'delete' },
      ]),
    );
  });

  it('passes other errors through at once', async () => {
    const admin = new RacingAdmin(0);
    const boom = Object.assign(new Error('denied'), { type: 'TOPIC_AUTHORIZATION_FAILED' });
    admin.describeConfigs = async () => {
      throw boom;
    };
    await expect(applyTopics(admin as unknown as Admin, specs)).rejects.toBe(boom);
  });
});
