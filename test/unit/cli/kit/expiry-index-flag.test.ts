import { Command } from 'commander';
import {
  addTtlSettingsOptions,
  describeSettings,
  settingsFromFlags,
  type TtlSettingsFlags,
} from '../../../../cli/kit/ttl-flags';

describe('ttl update --expiry-index', () => {
  const parse = (args: string[]): TtlSettingsFlags =>
    addTtlSettingsOptions(new Command('update').exitOverride())
      .parse(args, { from: 'user' })
      .opts<TtlSettingsFlags>();

  it('alone opts in with the default shard count; =N sets the shards', async () => {
    expect((await settingsFromFlags(parse(['--attribute', 'exp', '--expiry-index']))).expiryIndex).toEqual({
      shards: 16,
    });
    expect((await settingsFromFlags(parse(['--attribute', 'exp', '--expiry-index=32']))).expiryIndex).toEqual(
      {
        shards: 32,
      },
    );
    expect((await settingsFromFlags(parse(['--attribute', 'exp']))).expiryIndex).toBeUndefined();
  });

  it('refuses a bad shard count naming the flag', async () => {
    await expect(settingsFromFlags(parse(['--attribute', 'exp', '--expiry-index=x']))).rejects.toThrow(
      '--expiry-index: expected a number of shards, got "x"',
    );
    await expect(settingsFromFlags(parse(['--attribute', 'exp', '--expiry-index=0']))).rejects.toThrow(
      /^--expiry-index: /,
    );
  });

  it('is shown by describe', () => {
    expect(
      describeSettings({ policy: { mode: 'dynamodb', attributeName: 'exp' }, expiryIndex: { shards: 8 } }),
    ).toBe('dynamodb on exp; expiry index, 8 shards');
  });
});
