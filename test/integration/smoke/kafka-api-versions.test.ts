import { createRequire } from 'node:module';
import { testConfig } from '../../support/stack';

/**
 * Every Kafka API kafkajs 2.2.4 implements must be usable on the stack's broker. kafkajs sends
 * min(its newest implementation, the broker's max) and never looks at the broker's min, so an API whose newest
 * kafkajs version is below the broker's min would fail only when first used. Kafka 4 removed old request versions
 * (KIP-896); this pins which ones kafkajs sends, on whichever release the stack runs (TTLSTREAM_STACK_KAFKA_VERSION).
 */

// kafkajs internals (no public API answers "which versions does the broker accept"); typed as far as used here.
interface VersionRange {
  minVersion: number;
  maxVersion: number;
}
interface InternalBroker {
  versions: Record<number, VersionRange | undefined>;
  connect(): Promise<void>;
  disconnect(): Promise<void>;
}
type Ctor<T> = new (options: Record<string, unknown>) => T;

const load = createRequire(require.resolve('kafkajs'));
const { requests } = load('./src/protocol/requests') as { requests: Record<string, { versions: string[] }> };
const apiKeys = load('./src/protocol/requests/apiKeys') as Record<string, number>;
const Broker = load('./src/broker') as Ctor<InternalBroker>;
const ConnectionPool = load('./src/network/connectionPool') as Ctor<object>;
const socketFactory = load('./src/network/socketFactory') as () => unknown;
const { createLogger, LEVELS } = load('./src/loggers') as {
  createLogger(options: { level: number; logCreator: () => () => void }): unknown;
  LEVELS: { NOTHING: number };
};

describe('smoke: kafkajs request versions on this broker', () => {
  it('finds a version the broker accepts for every API kafkajs implements', async () => {
    const [host, port] = testConfig().kafka.brokers[0]!.split(':');
    const logger = createLogger({ level: LEVELS.NOTHING, logCreator: () => () => undefined });
    const connectionPool = new ConnectionPool({
      host,
      port: Number(port),
      logger,
      clientId: 'api-versions-smoke',
      connectionTimeout: 5000,
      requestTimeout: 10000,
      enforceRequestTimeout: true,
      socketFactory: socketFactory(),
    });
    const broker = new Broker({ connectionPool, logger });
    await broker.connect();
    try {
      const report: Record<string, string> = {};
      const unusable: string[] = [];
      for (const [name, def] of Object.entries(requests)) {
        const ours = def.versions.map(Number);
        if (ours.length === 0) continue; // declared by kafkajs but not implemented
        const range = broker.versions[apiKeys[name]!];
        if (!range) {
          unusable.push(`${name}: not offered`);
          continue;
        }
        const sent = Math.min(Math.max(...ours), range.maxVersion);
        report[name] = `v${sent} (broker v${range.minVersion}-${range.maxVersion})`;
        if (sent < range.minVersion || !ours.includes(sent)) unusable.push(`${name}: ${report[name]}`);
      }
      expect(unusable).toEqual([]);
      // The APIs the pipeline, the archiver, replay and `topics apply` use: a regression in any of them is named here.
      for (const api of [
        'Produce',
        'Fetch',
        'ListOffsets',
        'Metadata',
        'OffsetCommit',
        'OffsetFetch',
        'JoinGroup',
      ]) {
        expect(report).toHaveProperty(api);
      }
      expect(Object.keys(report)).toEqual(
        expect.arrayContaining(['CreateTopics', 'DescribeConfigs', 'AlterConfigs']),
      );
    } finally {
      await broker.disconnect();
    }
  });
});
