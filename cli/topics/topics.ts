import { Command } from 'commander';
import type { Admin } from 'kafkajs';
import type { TopicSpec, TopicState } from '../../core/topics';
import { action, example, jsonOption, type CommandEnv } from '../kit/command-kit';
import type { CliContext } from '../kit/context';
import { printJson, renderTable } from '../kit/io';

/** The declared topics (per-table naming needs the tables) and an admin client, closed by `fn`'s caller. */
async function withDeclared<T>(
  ctx: CliContext,
  tablesFlag: string[] | undefined,
  fn: (admin: Admin, specs: TopicSpec[]) => Promise<T>,
): Promise<T> {
  const { config } = ctx;
  let tables = tablesFlag ?? [];
  if (config.topics.naming === 'per-table' && tables.length === 0) {
    tables = (await ctx.settingsStore.enabledTables()).map((t) => t.table);
  }
  const { declaredTopics } = await import('../../core/topics');
  const specs = declaredTopics(config, tables);
  const admin = ctx.kafka('admin').admin();
  await admin.connect();
  try {
    return await fn(admin, specs);
  } finally {
    await admin.disconnect();
  }
}

/** What differs from the declaration, in words; empty when the topic is as declared. */
function differences(s: TopicState, withSettings = true): string[] {
  if (!s.exists) return [];
  const out: string[] = [];
  if (s.partitions !== s.spec.numPartitions)
    out.push(
      `${s.partitions} partitions, ${s.spec.numPartitions} declared (left as is: repartitioning breaks per-item order)`,
    );
  if (s.spec.replicationFactor > 0 && s.replicationFactor !== s.spec.replicationFactor)
    out.push(
      `replication factor ${s.replicationFactor}, ${s.spec.replicationFactor} declared (not changed here)`,
    );
  if (withSettings)
    for (const d of s.drift) out.push(`${d.name}=${d.actual ?? '(unset)'}, ${d.declared} declared`);
  return out;
}

function stateJson(s: TopicState): Record<string, unknown> {
  return {
    topic: s.spec.topic,
    exists: s.exists,
    partitions: s.partitions ?? null,
    declaredPartitions: s.spec.numPartitions,
    replicationFactor: s.replicationFactor ?? null,
    declaredReplicationFactor: s.spec.replicationFactor,
    settingsDrift: s.drift,
  };
}

function stateRows(states: TopicState[], result: (s: TopicState) => string): string[][] {
  return states.map((s) => [
    s.spec.topic,
    s.exists ? String(s.partitions) : '-',
    s.exists ? String(s.replicationFactor) : '-',
    result(s),
  ]);
}

const tableOption = [
  '-t, --table <name...>',
  'with per-table naming: the tables (default: every table with TTL enabled)',
] as const;

export function topicsCommand(env: CommandEnv): Command {
  return new Command('topics')
    .description("ttlstream's Kafka topics, declared in code (core/topics.ts)")
    .addCommand(applyTopicsCommand(env))
    .addCommand(describeTopicsCommand(env));
}

interface ApplyFlags {
  table?: string[];
  json?: boolean;
  dryRun?: boolean;
}

function applyTopicsCommand(env: CommandEnv): Command {
  const apply = new Command('apply')
    .description(
      'create missing topics and bring the settings of existing ones to the declared values (idempotent); reports the partitions and replication factor the broker really has',
    )
    .option(...tableOption)
    .option('--dry-run', 'say what would be created or changed, change nothing')
    .addOption(jsonOption())
    .action(
      action<ApplyFlags>(env, (ctx, opts) =>
        withDeclared(ctx, opts.table, (admin, specs) =>
          opts.dryRun ? planTopics(ctx, opts, admin, specs) : applyDeclared(ctx, opts, admin, specs),
        ),
      ),
    );
  return example(
    apply,
    'ttlstream topics apply',
    'ttlstream topics apply --dry-run',
    'TTLSTREAM_TOPICS_NAMING=per-table ttlstream topics apply --table orders sessions --json',
  );
}

/** `topics apply --dry-run`: what would be created or changed. */
async function planTopics(
  ctx: CliContext,
  opts: ApplyFlags,
  admin: Admin,
  specs: TopicSpec[],
): Promise<void> {
  const { inspectTopics } = await import('../../core/topics');
  const states = await inspectTopics(admin, specs);
  const plan = (s: TopicState): string =>
    !s.exists
      ? 'would create'
      : s.drift.length > 0
        ? `would update ${s.drift.map((d) => d.name).join(', ')}`
        : 'settings as declared';
  if (opts.json)
    return printJson(ctx.io, {
      dryRun: true,
      topics: states.map((s) => ({ ...stateJson(s), plan: plan(s) })),
    });
  ctx.io.stdout.write(renderTable(['TOPIC', 'PARTITIONS', 'RF', 'PLAN (dry run)'], stateRows(states, plan)));
  warnDifferences(ctx, states);
}

/** `topics apply`: create and converge, then report what the broker has now. */
async function applyDeclared(
  ctx: CliContext,
  opts: ApplyFlags,
  admin: Admin,
  specs: TopicSpec[],
): Promise<void> {
  const { applyTopics, inspectTopics } = await import('../../core/topics');
  const result = await applyTopics(admin, specs);
  // What the broker has now, not what was asked for: "unchanged" must never hide a difference.
  const states = await inspectTopics(admin, specs);
  const outcome = (s: TopicState): string => {
    const base = result.created.includes(s.spec.topic)
      ? 'created'
      : result.altered.includes(s.spec.topic)
        ? 'settings updated'
        : 'settings as declared';
    return differences(s, false).length > 0 ? `${base}; differs (see below)` : base;
  };
  if (opts.json)
    return printJson(ctx.io, { topics: specs.map((s) => s.topic), ...result, state: states.map(stateJson) });
  ctx.io.stdout.write(renderTable(['TOPIC', 'PARTITIONS', 'RF', 'RESULT'], stateRows(states, outcome)));
  warnDifferences(ctx, states);
}

function describeTopicsCommand(env: CommandEnv): Command {
  const describe = new Command('describe')
    .description(
      'the declared topics as the broker has them: partitions, replication factor, settings that differ',
    )
    .option(...tableOption)
    .addOption(jsonOption())
    .action(
      action<{ table?: string[]; json?: boolean }>(env, (ctx, opts) =>
        withDeclared(ctx, opts.table, (admin, specs) => describeTopics(ctx, opts, admin, specs)),
      ),
    );
  return example(describe, 'ttlstream topics describe', 'ttlstream topics describe --json');
}

async function describeTopics(
  ctx: CliContext,
  opts: { json?: boolean },
  admin: Admin,
  specs: TopicSpec[],
): Promise<void> {
  const { inspectTopics } = await import('../../core/topics');
  const states = await inspectTopics(admin, specs);
  if (opts.json) return printJson(ctx.io, states.map(stateJson));
  const state = (s: TopicState): string => {
    if (!s.exists) return 'missing (topics apply creates it)';
    const d = differences(s);
    return d.length === 0 ? 'as declared' : d.join('; ');
  };
  ctx.io.stdout.write(renderTable(['TOPIC', 'PARTITIONS', 'RF', 'STATE'], stateRows(states, state)));
}

/** Partition and replication differences are left to the operator: say so on stderr, one line each. */
function warnDifferences(ctx: CliContext, states: TopicState[]): void {
  for (const s of states)
    for (const d of differences(s, false))
      ctx.io.stderr.write(`ttlstream: warning: ${s.spec.topic} has ${d}\n`);
}
