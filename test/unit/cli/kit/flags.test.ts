import { ValidationError } from '../../../../core/errors';
import { parseKeyJson, parseTtlAttribute, parseTtlHandling } from '../../../../cli/restore/restore';
import { describeSettings, hasSettingsFlags, settingsFromFlags } from '../../../../cli/kit/ttl-flags';

describe('settingsFromFlags', () => {
  const policyOf = async (flags: Parameters<typeof settingsFromFlags>[0]) =>
    (await settingsFromFlags(flags)).policy;

  it('dynamodb mode is the default and needs --attribute', async () => {
    expect(await settingsFromFlags({ attribute: 'expiresAt', legalHoldAttribute: 'hold' })).toEqual({
      policy: { mode: 'dynamodb', attributeName: 'expiresAt' },
      legalHoldAttribute: 'hold',
    });
    await expect(settingsFromFlags({})).rejects.toThrow(
      new ValidationError('--attribute is required with --mode dynamodb'),
    );
  });

  it('cosmos mode: off / -1 / seconds, with attribute defaults from the schema', async () => {
    expect(await policyOf({ mode: 'cosmos', defaultTtl: 'off' })).toEqual({
      mode: 'cosmos',
      defaultTtl: null,
      ttlAttribute: 'ttl',
      lastWriteAttribute: '_ts',
    });
    expect(await policyOf({ mode: 'cosmos', defaultTtl: '-1', ttlAttribute: 't' })).toMatchObject({
      defaultTtl: -1,
      ttlAttribute: 't',
    });
    expect(await policyOf({ mode: 'cosmos', defaultTtl: '3600' })).toMatchObject({ defaultTtl: 3600 });
    await expect(settingsFromFlags({ mode: 'cosmos', defaultTtl: '-5' })).rejects.toThrow(
      /--default-ttl: expected off, -1 or a whole number/,
    );
    await expect(settingsFromFlags({ mode: 'cosmos', defaultTtl: '1.5' })).rejects.toThrow(ValidationError);
  });

  it('mongo mode: expireAfterSeconds and time field, format defaulted', async () => {
    expect(await policyOf({ mode: 'mongo', timeField: 'createdAt', expireAfterSeconds: '60' })).toEqual({
      mode: 'mongo',
      timeField: 'createdAt',
      expireAfterSeconds: 60,
      timeFormat: 'epoch-seconds',
    });
    expect(await policyOf({ mode: 'mongo', timeField: 't', expireAfterSeconds: 'off' })).toMatchObject({
      expireAfterSeconds: 'off',
    });
    await expect(settingsFromFlags({ mode: 'mongo', expireAfterSeconds: '60' })).rejects.toThrow(
      '--time-field is required with --mode mongo',
    );
    await expect(
      settingsFromFlags({ mode: 'mongo', timeField: 't', expireAfterSeconds: '-1' }),
    ).rejects.toThrow(/--expire-after-seconds: expected off or a whole number/);
  });

  it('schema violations name the flag, or the path inside --settings', async () => {
    await expect(settingsFromFlags({ attribute: '' })).rejects.toThrow(
      /^--attribute: attribute name must not be empty$/,
    );
    await expect(settingsFromFlags({ attribute: 'a', legalHoldAttribute: 'x'.repeat(256) })).rejects.toThrow(
      /^--legal-hold-attribute: /,
    );
    await expect(
      settingsFromFlags({ settings: '{"policy":{"mode":"dynamodb","attributeName":""}}' }),
    ).rejects.toThrow(/^--settings policy\.attributeName: /);
    await expect(settingsFromFlags({ settings: '{nope' })).rejects.toThrow('--settings: not valid JSON');
    expect(
      await policyOf({ settings: '{"policy":{"mode":"mongo","expireAfterSeconds":5,"timeField":"t"}}' }),
    ).toMatchObject({
      mode: 'mongo',
      timeFormat: 'epoch-seconds',
    });
  });

  it('knows when settings were given at all, and describes them in one phrase', () => {
    expect(hasSettingsFlags({})).toBe(false);
    expect(hasSettingsFlags({ legalHoldAttribute: 'h' })).toBe(false);
    expect(hasSettingsFlags({ attribute: 'a' })).toBe(true);
    expect(describeSettings(null)).toBe('-');
    expect(describeSettings({ policy: { mode: 'dynamodb', attributeName: 'exp' } })).toBe('dynamodb on exp');
    expect(
      describeSettings({
        policy: { mode: 'mongo', timeField: 'c', expireAfterSeconds: 60, timeFormat: 'iso-8601' },
        legalHoldAttribute: 'h',
      }),
    ).toBe('mongo: c + 60 s (iso-8601); legal hold h');
  });
});

describe('restore flag parsers', () => {
  it('--ttl keep | remove | extend=<seconds>', () => {
    expect(parseTtlHandling('keep')).toBe('keep');
    expect(parseTtlHandling('remove')).toBe('remove');
    expect(parseTtlHandling('extend=86400')).toEqual({ extendSeconds: 86400 });
    for (const bad of ['', 'extend', 'extend=0', 'extend=-5', 'extend=1.5', 'forever']) {
      expect(() => parseTtlHandling(bad)).toThrow(ValidationError);
    }
  });

  it('--ttl-attribute is an attribute name of 1-255 characters', () => {
    expect(parseTtlAttribute('expiresAt')).toBe('expiresAt');
    expect(parseTtlAttribute('a'.repeat(255))).toBe('a'.repeat(255));
    expect(() => parseTtlAttribute('')).toThrow(ValidationError);
    expect(() => parseTtlAttribute('a'.repeat(256))).toThrow(
      /expected an attribute name of 1-255 characters/,
    );
  });

  it('--key is DynamoDB JSON of a key', () => {
    expect(parseKeyJson('{"pk":{"S":"a"},"sk":{"N":"1"}}')).toEqual({ pk: { S: 'a' }, sk: { N: '1' } });
    expect(() => parseKeyJson('pk=a')).toThrow('not JSON: pk=a');
    expect(() => parseKeyJson('{}')).toThrow(/expected an object of DynamoDB attribute values/);
    expect(() => parseKeyJson('{"pk":"a"}')).toThrow(
      'key attribute pk is not a DynamoDB attribute value such as {"S":"a"}',
    );
    expect(() => parseKeyJson('[1]')).toThrow(ValidationError);
  });
});
