import { parseConfig } from '../../../core/config';
import { createKafka, kafkaLogLevel } from '../../../core/clients';
import { metrics } from '../../../core/metrics';
import { capturingLogger } from '../../support/logger';

/** kafkajs 2.2.4's protocol error table: the message texts the level mapping matches on. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { errorCodes } = require('kafkajs/src/protocol/error') as {
  errorCodes: Array<{ type: string; message: string }>;
};
const kafkajsMessage = (type: string): string => {
  const found = errorCodes.find((e) => e.type === type);
  if (!found) throw new Error(`kafkajs has no error ${type}`);
  return found.message;
};

const ERROR = 1;
const WARN = 2;

describe('kafkajs log levels (no error-level lines for what kafkajs retries itself)', () => {
  it.each([
    'REBALANCE_IN_PROGRESS',
    'GROUP_LOAD_IN_PROGRESS',
    'GROUP_COORDINATOR_NOT_AVAILABLE',
    'NOT_COORDINATOR_FOR_GROUP',
    'UNKNOWN_MEMBER_ID',
    'ILLEGAL_GENERATION',
    'MEMBER_ID_REQUIRED',
    'LEADER_NOT_AVAILABLE',
    'NOT_LEADER_FOR_PARTITION',
    'REQUEST_TIMED_OUT',
    'NETWORK_EXCEPTION',
    'FENCED_LEADER_EPOCH',
    'OFFSET_NOT_AVAILABLE',
  ])('a response with %s is a warning', (type) => {
    expect(
      kafkaLogLevel(ERROR, 'Response JoinGroup(key: 11, version: 5)', { error: kafkajsMessage(type) }),
    ).toBe('warn');
  });

  it('transport errors and consumer restarts are warnings; the rest stays error, other levels are kept', () => {
    expect(kafkaLogLevel(ERROR, 'Connection error: connect ECONNREFUSED 127.0.0.1:9092', {})).toBe('warn');
    expect(kafkaLogLevel(ERROR, 'Connection timeout', {})).toBe('warn');
    expect(kafkaLogLevel(ERROR, 'Restarting the consumer in 300ms', {})).toBe('warn');
    expect(
      kafkaLogLevel(ERROR, 'The coordinator is not aware of this member, re-joining the group', {}),
    ).toBe('warn');
    expect(
      kafkaLogLevel(ERROR, 'Response Produce(key: 0, version: 7)', {
        error: kafkajsMessage('KAFKA_STORAGE_ERROR'),
      }),
    ).toBe('error');
    expect(kafkaLogLevel(ERROR, 'Crash: KafkaJSNonRetriableError: SASL authentication failed', {})).toBe(
      'error',
    );
    expect(kafkaLogLevel(WARN, 'The group is rebalancing, re-joining', {})).toBe('warn');
  });

  it('a CreateTopics response error is a warning: a lost creation race, or a failure the caller reports', () => {
    expect(
      kafkaLogLevel(ERROR, 'Response CreateTopics(key: 19, version: 3)', { error: 'Topic creation errors' }),
    ).toBe('warn');
    expect(
      kafkaLogLevel(ERROR, 'Response DeleteTopics(key: 20, version: 1)', { error: 'Topic deletion errors' }),
    ).toBe('error');
  });

  it("applies to the client's own logger: a rebalance response is logged at warn, not error", async () => {
    const errors = async (kind: string): Promise<number> =>
      (await metrics.kafkaClientErrors.get()).values.find((v) => v.labels.kind === kind)?.value ?? 0;
    const [transientBefore, errorBefore] = [await errors('transient'), await errors('error')];
    const logs = capturingLogger();
    const kafka = createKafka(parseConfig({}), logs.logger);
    kafka.logger().error('Response Heartbeat(key: 12, version: 3)', {
      error: kafkajsMessage('REBALANCE_IN_PROGRESS'),
    });
    kafka.logger().error('Response Produce(key: 0, version: 7)', { error: 'something new' });
    const lines = logs
      .text()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { level: number; msg: string });
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [40, 'Response Heartbeat(key: 12, version: 3)'],
      [50, 'Response Produce(key: 0, version: 7)'],
    ]);
    // Both are counted (ttlstream_kafka_client_errors_total), each under its kind.
    expect(await errors('transient')).toBe(transientBefore + 1);
    expect(await errors('error')).toBe(errorBefore + 1);
  });
});
