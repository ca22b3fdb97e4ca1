import { Option, type Command } from 'commander';
import { ValidationError } from '../../core/errors';
import type { TableTtlSettings } from '../../policy/settings';
import type { CarriedSetting } from '../../control/ttl-state';

/** The TTL-settings flags shared by `ttl update --enable` and `preview` (which can try settings before enabling). */
export interface TtlSettingsFlags {
  mode?: 'dynamodb' | 'cosmos' | 'mongo';
  attribute?: string;
  defaultTtl?: string;
  ttlAttribute?: string;
  lastWriteAttribute?: string;
  expireAfterSeconds?: string;
  timeField?: string;
  timeFormat?: string;
  legalHoldAttribute?: string;
  /** `--expiry-index` alone is true; `--expiry-index=32` the shard count. */
  expiryIndex?: string | boolean;
  deleter?: 'ttlstream' | 'dynamodb';
  settings?: string;
}

export function addTtlSettingsOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--mode <mode>', 'TTL semantics').choices(['dynamodb', 'cosmos', 'mongo']))
    .option('--attribute <name>', 'dynamodb mode: the Number attribute holding the expiry in epoch seconds')
    .option('--default-ttl <seconds|off>', 'cosmos mode: container default TTL: off, -1 (never) or seconds')
    .option('--ttl-attribute <name>', 'cosmos mode: per-item ttl attribute (default ttl)')
    .option(
      '--last-write-attribute <name>',
      'cosmos mode: last-write time attribute, epoch seconds (default _ts)',
    )
    .option(
      '--expire-after-seconds <seconds|off>',
      'mongo mode: expireAfterSeconds after the time field, or off',
    )
    .option('--time-field <name>', 'mongo mode: the time field')
    .addOption(
      new Option('--time-format <format>', 'mongo mode: how the time field is stored').choices([
        'epoch-seconds',
        'epoch-millis',
        'iso-8601',
      ]),
    )
    .option('--legal-hold-attribute <name>', 'items with this attribute BOOL true are never deleted')
    .option(
      '--expiry-index [shards]',
      'find expired items through the expiry index (a sparse GSI queried per shard) instead of scanning; shards default 16',
    )
    .addOption(
      new Option(
        '--deleter <who>',
        "who deletes expired items: ttlstream (within seconds, one write each) or dynamodb (DynamoDB's own TTL, within days, no write cost; the streams role follows the table's stream and publishes its deletions; dynamodb mode only)",
      ).choices(['ttlstream', 'dynamodb']),
    )
    .addOption(
      // The whole object replaces the flags: one given with it would be silently dropped.
      new Option(
        '--settings <json>',
        'the whole settings object as JSON instead of the flags above',
      ).conflicts([
        'mode',
        'attribute',
        'defaultTtl',
        'ttlAttribute',
        'lastWriteAttribute',
        'expireAfterSeconds',
        'timeField',
        'timeFormat',
        'legalHoldAttribute',
        'expiryIndex',
        'deleter',
      ]),
    );
}

const FLAG_FOR_PATH: Record<string, string> = {
  'policy.mode': '--mode',
  'policy.attributeName': '--attribute',
  'policy.defaultTtl': '--default-ttl',
  'policy.ttlAttribute': '--ttl-attribute',
  'policy.lastWriteAttribute': '--last-write-attribute',
  'policy.expireAfterSeconds': '--expire-after-seconds',
  'policy.timeField': '--time-field',
  'policy.timeFormat': '--time-format',
  legalHoldAttribute: '--legal-hold-attribute',
  'expiryIndex.shards': '--expiry-index',
  expiryIndex: '--expiry-index',
  deleter: '--deleter',
};

function expiryIndexFlag(value: string | boolean | undefined): { expiryIndex?: { shards?: number } } {
  if (value === undefined || value === false) return {};
  if (value === true) return { expiryIndex: {} };
  if (!/^\d+$/.test(value))
    throw new ValidationError(`--expiry-index: expected a number of shards, got "${value}"`);
  return { expiryIndex: { shards: Number(value) } };
}

function integerOrOff(text: string, flag: string, allowMinusOne: boolean): number | 'off' {
  if (text === 'off') return 'off';
  if (!/^-?\d+$/.test(text) || (text.startsWith('-') && !(allowMinusOne && text === '-1'))) {
    throw new ValidationError(
      `${flag}: expected ${allowMinusOne ? 'off, -1 or ' : 'off or '}a whole number of seconds, got "${text}"`,
    );
  }
  return Number(text);
}

export function parseExpireAfterSeconds(text: string): number | 'off' {
  return integerOrOff(text, '--expire-after-seconds', false);
}

/** True when any settings flag was given (preview uses the stored settings otherwise). */
export function hasSettingsFlags(flags: TtlSettingsFlags): boolean {
  return (
    flags.settings !== undefined ||
    flags.mode !== undefined ||
    flags.attribute !== undefined ||
    flags.defaultTtl !== undefined ||
    flags.timeField !== undefined ||
    flags.expireAfterSeconds !== undefined
  );
}

/**
 * What the flag form keeps from the table's stored settings: everything it has no flag for (the archive
 * retention), and the legal hold and expiry index unless their flags are given, so re-enabling a table never
 * silently drops a legal hold (deleting what it protects) or the index. `--settings` replaces the whole object.
 */
export function carriedByFlags(flags: TtlSettingsFlags): CarriedSetting[] {
  if (flags.settings !== undefined) return [];
  return [
    'archiveRetentionDays',
    ...(flags.legalHoldAttribute === undefined ? (['legalHoldAttribute'] as const) : []),
    ...(flags.expiryIndex === undefined ? (['expiryIndex'] as const) : []),
    ...(flags.deleter === undefined ? (['deleter'] as const) : []),
  ];
}

/** Flags → validated settings; a mistake is a ValidationError naming the flag (exit 2). */
export async function settingsFromFlags(flags: TtlSettingsFlags): Promise<TableTtlSettings> {
  let candidate: unknown;
  if (flags.settings !== undefined) {
    try {
      candidate = JSON.parse(flags.settings) as unknown;
    } catch {
      throw new ValidationError('--settings: not valid JSON');
    }
  } else {
    const mode = flags.mode ?? 'dynamodb';
    const hold = {
      ...(flags.legalHoldAttribute !== undefined ? { legalHoldAttribute: flags.legalHoldAttribute } : {}),
      ...expiryIndexFlag(flags.expiryIndex),
      // ttlstream, the default, is not written: settings without a deleter keep their meaning and their bytes.
      ...(flags.deleter === 'dynamodb' ? { deleter: flags.deleter } : {}),
    };
    const need = (value: string | undefined, flag: string): string => {
      if (value === undefined) throw new ValidationError(`${flag} is required with --mode ${mode}`);
      return value;
    };
    switch (mode) {
      case 'dynamodb':
        candidate = { policy: { mode, attributeName: need(flags.attribute, '--attribute') }, ...hold };
        break;
      case 'cosmos': {
        const d = integerOrOff(need(flags.defaultTtl, '--default-ttl'), '--default-ttl', true);
        candidate = {
          policy: {
            mode,
            defaultTtl: d === 'off' ? null : d,
            ...(flags.ttlAttribute !== undefined ? { ttlAttribute: flags.ttlAttribute } : {}),
            ...(flags.lastWriteAttribute !== undefined
              ? { lastWriteAttribute: flags.lastWriteAttribute }
              : {}),
          },
          ...hold,
        };
        break;
      }
      case 'mongo':
        candidate = {
          policy: {
            mode,
            expireAfterSeconds: parseExpireAfterSeconds(
              need(flags.expireAfterSeconds, '--expire-after-seconds'),
            ),
            timeField: need(flags.timeField, '--time-field'),
            ...(flags.timeFormat !== undefined ? { timeFormat: flags.timeFormat } : {}),
          },
          ...hold,
        };
        break;
    }
  }
  const { TableTtlSettingsSchema } = await import('../../policy/settings');
  const parsed = TableTtlSettingsSchema.safeParse(candidate);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue?.path.map(String).join('.') ?? '';
    const where =
      flags.settings !== undefined ? `--settings ${path}` : (FLAG_FOR_PATH[path] ?? (path || 'settings'));
    throw new ValidationError(`${where}: ${issue?.message ?? 'invalid'}`);
  }
  return parsed.data;
}

/** One phrase for humans: "dynamodb on expiresAt", "mongo: createdAt + 3600 s (iso-8601)". */
export function describeSettings(settings: TableTtlSettings | null): string {
  if (!settings) return '-';
  const p = settings.policy;
  const base =
    p.mode === 'dynamodb'
      ? `dynamodb on ${p.attributeName}`
      : p.mode === 'cosmos'
        ? `cosmos: default ${p.defaultTtl === null ? 'off' : p.defaultTtl === -1 ? 'never' : `${p.defaultTtl} s`}, item ${p.ttlAttribute}, last write ${p.lastWriteAttribute}`
        : `mongo: ${p.timeField} + ${p.expireAfterSeconds === 'off' ? 'off' : `${p.expireAfterSeconds} s`} (${p.timeFormat})`;
  const withHold = settings.legalHoldAttribute ? `${base}; legal hold ${settings.legalHoldAttribute}` : base;
  const withIndex = settings.expiryIndex
    ? `${withHold}; expiry index, ${settings.expiryIndex.shards} shards`
    : withHold;
  return settings.deleter === 'dynamodb'
    ? `${withIndex}; deleted by DynamoDB's TTL, followed from its stream`
    : withIndex;
}
