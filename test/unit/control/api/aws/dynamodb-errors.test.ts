import { ConflictError, ValidationError } from '../../../../../core/errors';
import {
  AwsError,
  parseDescribeInput,
  parseUpdateInput,
  toAwsError,
} from '../../../../../control/api/aws/dynamodb-endpoint';
import {
  ALREADY_DISABLED,
  ALREADY_ENABLED,
  planUpdate,
  type SettingsRow,
} from '../../../../../control/ttl-state';
import { dynamodbTtl } from '../../../../support/ttl-settings';

/** The AWS-compatible endpoint answers with DynamoDB's exact errors. */
const T0 = 1_735_689_600_000;
const PROP = 2000;
const ctx = { table: 'orders', now: T0 + PROP, propagationMs: PROP, by: 'aws:AK' };
const enabledRow: SettingsRow = {
  table: 'orders',
  enabled: true,
  settings: dynamodbTtl('expiresAt'),
  changedAt: T0,
  changedBy: 'aws:AK',
  settlesAt: T0 + PROP,
  version: 1,
};

function awsErrorOf(fn: () => unknown): { __type: string; message: string } {
  try {
    fn();
  } catch (err) {
    return toAwsError(err).body;
  }
  throw new Error('expected an error');
}

const VALIDATION = 'com.amazonaws.dynamodb.v20120810#ValidationException';
const SERIALIZATION = 'com.amazon.coral.service#SerializationException';

describe('UpdateTimeToLive semantics (planUpdate with "dynamodb")', () => {
  it('enabling what is enabled: TimeToLive is already enabled', () => {
    expect(ALREADY_ENABLED).toBe('TimeToLive is already enabled');
    const act = () =>
      planUpdate(enabledRow, { enabled: true, settings: dynamodbTtl('expiresAt') }, ctx, 'dynamodb');
    expect(act).toThrow(new ValidationError('TimeToLive is already enabled'));
    expect(awsErrorOf(act)).toEqual({ __type: VALIDATION, message: 'TimeToLive is already enabled' });
  });

  it('disabling what is disabled, or never was enabled: TimeToLive is already disabled', () => {
    expect(ALREADY_DISABLED).toBe('TimeToLive is already disabled');
    const disabled = { ...enabledRow, enabled: false };
    for (const current of [null, disabled]) {
      expect(() =>
        planUpdate(current, { enabled: false, settings: dynamodbTtl('expiresAt') }, ctx, 'dynamodb'),
      ).toThrow(new ValidationError('TimeToLive is already disabled'));
    }
  });

  it("another attribute while enabled: DynamoDB's message, no suffix", () => {
    for (const enabled of [true, false]) {
      const act = () => planUpdate(enabledRow, { enabled, settings: dynamodbTtl('other') }, ctx, 'dynamodb');
      expect(act).toThrow(
        new ConflictError(
          'TimeToLive is active on a different AttributeName: current AttributeName is expiresAt',
        ),
      );
    }
  });

  it("ttlstream's own semantics stay the default elsewhere (REST, CLI)", () => {
    expect(planUpdate(enabledRow, { enabled: true, settings: dynamodbTtl('expiresAt') }, ctx)).toEqual({
      kind: 'noop',
    });
    expect(planUpdate(null, { enabled: false }, ctx)).toEqual({ kind: 'noop' });
  });
});

describe('request validation in DynamoDB form', () => {
  const update = (body: unknown) => awsErrorOf(() => parseUpdateInput(body));

  it('length and pattern constraints name the value and the member', () => {
    expect(awsErrorOf(() => parseDescribeInput({ TableName: 'ab' }))).toEqual({
      __type: VALIDATION,
      message:
        "1 validation error detected: Value 'ab' at 'tableName' failed to satisfy constraint: Member must have length greater than or equal to 3",
    });
    expect(awsErrorOf(() => parseDescribeInput({ TableName: 'bad name!' })).message).toBe(
      "1 validation error detected: Value 'bad name!' at 'tableName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+",
    );
    expect(
      update({ TableName: 'a!', TimeToLiveSpecification: { Enabled: true, AttributeName: '' } }).message,
    ).toBe(
      "3 validation errors detected: Value 'a!' at 'tableName' failed to satisfy constraint: Member must have length greater than or equal to 3; " +
        "Value 'a!' at 'tableName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+; " +
        "Value '' at 'timeToLiveSpecification.attributeName' failed to satisfy constraint: Member must have length greater than or equal to 1",
    );
  });

  it('missing or null members: Member must not be null', () => {
    expect(update({ TableName: 'orders' }).message).toBe(
      "1 validation error detected: Value null at 'timeToLiveSpecification' failed to satisfy constraint: Member must not be null",
    );
    expect(update({ TableName: null, TimeToLiveSpecification: {} }).message).toBe(
      "3 validation errors detected: Value null at 'tableName' failed to satisfy constraint: Member must not be null; " +
        "Value null at 'timeToLiveSpecification.enabled' failed to satisfy constraint: Member must not be null; " +
        "Value null at 'timeToLiveSpecification.attributeName' failed to satisfy constraint: Member must not be null",
    );
  });

  it('wrong JSON types are SerializationException, before any constraint', () => {
    expect(update({ TableName: 5, TimeToLiveSpecification: { Enabled: true, AttributeName: 'a' } })).toEqual({
      __type: SERIALIZATION,
      message: 'NUMBER_VALUE can not be converted to a String',
    });
    expect(
      update({ TableName: 'orders', TimeToLiveSpecification: { Enabled: 'true', AttributeName: 'a' } }),
    ).toEqual({
      __type: SERIALIZATION,
      message: 'STRING_VALUE can not be converted to a Boolean',
    });
    expect(update({ TableName: 'ab', TimeToLiveSpecification: 'x' }).__type).toBe(SERIALIZATION);
    expect(update({ TableName: { S: 'orders' } }).message).toBe(
      'Start of structure or map found where not expected.',
    );
    expect(update([]).message).toBe('Start of list found where not expected');
  });

  it('bounds the message when a value is huge', () => {
    const message = awsErrorOf(() => parseDescribeInput({ TableName: 'x'.repeat(20_000) })).message;
    expect(message).toMatch(/^1 validation error detected: Value 'x+/);
    expect(message.length).toBeLessThanOrEqual(512);
  });

  it('accepts valid input and ignores unknown members', () => {
    expect(
      parseUpdateInput({
        TableName: 'orders',
        TimeToLiveSpecification: { Enabled: false, AttributeName: 'exp' },
        Extra: 1,
      }),
    ).toEqual({ TableName: 'orders', TimeToLiveSpecification: { Enabled: false, AttributeName: 'exp' } });
    expect(new AwsError('ValidationException', 'x').type).toBe('ValidationException');
  });
});
