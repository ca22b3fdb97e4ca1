import { Command } from 'commander';
import { action, example, jsonOption, type CommandEnv } from '../command-kit';
import { printJson, renderTable } from '../io';

export function topicsCommand(env: CommandEnv): Command {
  const topics = new Command('topics').description(
    "ttlstream's Kafka topics, declared in code (core/topics.ts)",
  );
  const apply = new Command('apply')
    .description(
      'create missing topics and bring the settings of existing ones to the declared values (idempotent)',
    )
    .option(
      '-t, --table <name...>',
      'with per-table naming: the tables (default: every table with TTL enabled)',
    )
    .addOption(jsonOption())
    .action(
      action<{ table?: string[]; json?: boolean }>(env, async (ctx, opts) => {
        const { config } = ctx;
        let tables = opts.table ?? [];
        if (config.topics.naming === 'per-table' && tables.length === 0) {
          tables = (await ctx.settingsStore.enabledTables()).map((t) => t.table);
        }
        const { applyTopics, declaredTopics } = await import('../../core/topics');
        const specs = declaredTopics(config, tables);
        const admin = ctx.kafka('admin').admin();
        await admin.connect();
        try {
          const result = await applyTopics(admin, specs);
          if (opts.json) return printJson(ctx.io, { topics: specs.map((s) => s.topic), ...result });
          const state = (t: string): string =>
            result.created.includes(t)
              ? 'created'
              : result.altered.includes(t)
                ? 'settings updated'
                : 'unchanged';
          ctx.io.stdout.write(
            renderTable(
              ['TOPIC', 'PARTITIONS', 'RESULT'],
              specs.map((s) => [s.topic, String(s.numPartitions), state(s.topic)]),
            ),
          );
          for (const m of result.partitionMismatches) {
            ctx.io.stderr.write(
              `ttlstream: warning: ${m.topic} has ${m.actual} partitions, ${m.declared} declared (left as is: repartitioning breaks per-item order)\n`,
            );
          }
        } finally {
          await admin.disconnect();
        }
      }),
    );
  example(
    apply,
    'ttlstream topics apply',
    'TTLSTREAM_TOPICS_NAMING=per-table ttlstream topics apply --table orders sessions --json',
  );
  return topics.addCommand(apply);
}
