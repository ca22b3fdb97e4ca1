import { GetItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Admin } from 'kafkajs';
import { openCatalog } from '../../archive/catalog';
import { claimBeyondTopic, committedOffsetOf, readPartitionHistory } from '../../archive/history';
import { silentLogger } from '../../core/logger';
import { restore } from '../../archive-tools/restore';
import { consumeTtlStream } from '../../consumer';
import { stackEndpointsPath, type ConfigInput } from '../../core/config';
import { applyTopics, declaredTopics } from '../../core/topics';
import { canonicalJson, isTtlDelete, tableOf, type StreamRecord } from '../../schemas';
import { openStorage } from '../archive/files';
import { roleStarters } from '../run/roles';
import type { CliContext } from '../kit/context';
import { style, useColour, type Style } from '../kit/io';
import { startRoles } from '../kit/run-roles';
import { ShutdownCoordinator } from '../kit/shutdown';
import { DEMO_SETTINGS, DEMO_TABLE, TTL_ATTRIBUTE, demoItems, type DemoItem } from './items';
import { bringUpStack, packageRoot } from './stack';
import { presentIds, putItems, recreateTable } from './table';
import type { ErrorCode } from '../../core/error-codes';
import { TtlstreamError } from '../../core/errors';

/** The demo's own topics, tables and timings, so it never touches (or is slowed by) other tables' TTL. */
export function demoOverrides(stateDir = dirname(stackEndpointsPath())): ConfigInput {
  return {
    topics: {
      naming: 'shared',
      shared: 'ttlstream.demo.remove',
      deadLetter: 'ttlstream.demo.dead-letter',
      partitions: 3,
    },
    tables: { control: 'ttlstream_demo_control', marks: 'ttlstream_demo_marks' },
    archive: {
      url: `file://${join(stateDir, 'demo-archive')}`,
      groupId: 'ttlstream-demo-archiver',
      rollMs: 2000,
    },
    api: { ttlPropagationMs: 1000 },
    scanner: { totalSegments: 2, leaseMs: 3000, passIntervalMs: 500 },
    producer: { shards: 2, leaseMs: 3000, pollMs: 100 },
  };
}

export interface DemoOptions {
  /** Run infra/up.sh first (default true). */
  stack: boolean;
  /** Budget for the watch stage (items expiring, records, archive files). */
  watchTimeoutMs: number;
}

class StageFailed extends TtlstreamError {
  static override readonly code: ErrorCode = 'TTLSTREAM_DEMO_STAGE';
  constructor(
    readonly stage: string,
    message: string,
  ) {
    super(message);
  }
}

interface SeenRecord {
  eventID: string;
  oldImage: Record<string, unknown>;
  topic: string;
  partition: number;
  offset: string;
}

const STAGES = ['stack', 'table', 'ttl', 'pipeline', 'watch', 'checks', 'restore'] as const;

/** What the demo's stages share: the output, the clock, the stage counter, the shutdown, the viewer. */
interface DemoRun {
  ctx: CliContext;
  options: DemoOptions;
  s: Style;
  t0: number;
  coordinator: ShutdownCoordinator;
  consumer?: { stop(): Promise<void> };
  /** The stage under way, named when something fails. */
  current: string;
  stageNo: number;
}

/** The demo table's items: those that must expire, and those that must stay. */
interface Seeded {
  items: DemoItem[];
  expiring: DemoItem[];
  kept: DemoItem[];
}

/** What the viewer saw on the topic. */
interface Viewed {
  records: Map<string, SeenRecord>;
  /** Records of items that must stay. */
  unexpected: string[];
  /** Records without the TTL service identity. */
  notTtl: string[];
}

/** What the watch stage saw: items gone, records archived, and the archive files that hold them. */
interface Watched {
  gone: Set<string>;
  archivedEvents: Set<string>;
  files: Set<string>;
  storage: ReturnType<typeof openStorage>;
}

function say(run: DemoRun, line = ''): void {
  void run.ctx.io.stdout.write(line + '\n');
}

function clock(run: DemoRun): string {
  return run.s.dim(`${((Date.now() - run.t0) / 1000).toFixed(1).padStart(6)}s`);
}

function stage(run: DemoRun, name: (typeof STAGES)[number], detail: string): void {
  const { s } = run;
  run.stageNo++;
  say(run, `${s.bold(`[${run.stageNo}/${STAGES.length}]`)} ${s.cyan(name.padEnd(9))} ${detail}`);
}

function interrupted(run: DemoRun): void {
  if (run.coordinator.isShuttingDown) throw new StageFailed('interrupted', 'stopped by a signal');
}

/**
 * `ttlstream demo`: the README's first promise, run for real against the local stack. Every stage
 * is checked, not just shown: exit 0 only when expired items are gone, the others are still there,
 * their REMOVE records arrived, the archive holds them, and a restore brought one back.
 */
export async function runDemo(ctx: CliContext, options: DemoOptions): Promise<number> {
  const { io } = ctx;
  const coordinator = new ShutdownCoordinator({
    timeoutMs: 30_000,
    print: (l) => void io.stderr.write(l + '\n'),
    logger: ctx.logger,
  });
  coordinator.install();
  const run: DemoRun = {
    ctx,
    options,
    s: style(useColour(io)),
    t0: Date.now(),
    coordinator,
    current: 'stack',
    stageNo: 0,
  };

  say(run, run.s.bold('ttlstream demo') + ' — precise TTL for a DynamoDB-API table, end to end');
  say(run);
  try {
    await bringUp(run);
    const seeded = await seedTable(run);
    await enableTtl(run);
    const viewed = await startPipeline(run, seeded);
    const watched = await watch(run, seeded, viewed);
    const stillThere = await check(run, seeded, viewed, watched);
    const chosen = await restoreOne(run, seeded, viewed, watched);

    // Stop the pipeline gracefully, then summarise.
    await run.consumer?.stop();
    run.consumer = undefined;
    const code = await coordinator.shutdown('demo finished');
    if (code !== 0) throw new StageFailed('shutdown', 'the pipeline did not stop cleanly');
    summarise(run, seeded, viewed, watched, stillThere, chosen);
    return 0;
  } catch (err) {
    const failed =
      err instanceof StageFailed ? err : new StageFailed(run.current, (err as Error)?.message ?? String(err));
    io.stderr.write(
      `ttlstream: demo failed at stage "${failed.stage}": ${failed.message.split('\n').join(' | ')}\n`,
    );
    return 1;
  } finally {
    if (run.consumer) await run.consumer.stop().catch(() => undefined);
    if (!coordinator.isShuttingDown) await coordinator.shutdown('demo ended', 1);
    else await coordinator.done;
    coordinator.uninstall();
  }
}

/** 1. The local stack (idempotent). */
async function bringUp(run: DemoRun): Promise<void> {
  const { ctx, options, s } = run;
  if (options.stack) {
    const root = packageRoot();
    if (!root) throw new StageFailed('stack', 'cannot find the ttlstream checkout (infra/up.sh)');
    say(
      run,
      s.dim(
        '      bringing up the local stack: bash infra/up.sh (idempotent; a first start downloads its parts)',
      ),
    );
    try {
      await bringUpStack(root, (line) => say(run, s.dim(`      ${line}`)));
    } catch (err) {
      throw new StageFailed('stack', (err as Error).message);
    }
    // The stack just brought up is the one to use (its endpoints file), whatever the shell says.
    ctx.useLocalStack(dirname(stackEndpointsPath(root)));
  }
  // Configuration is read only now: infra/up.sh has just written the stack's endpoints.
  const config = ctx.config;
  stage(
    run,
    'stack',
    `Kafka ${config.kafka.brokers.join(',')}, DynamoDB API ${config.dynamodb.endpoint ?? '(AWS)'}, S3 ${config.archive.s3Endpoint ?? '(AWS)'}`,
  );
  interrupted(run);
}

/** 2. A fresh demo table with a mix of items. */
async function seedTable(run: DemoRun): Promise<Seeded> {
  const { ctx, s } = run;
  const ddb = ctx.ddb;
  run.current = 'table';
  const nowS = Math.floor(Date.now() / 1000);
  const items = demoItems(nowS);
  await recreateTable(ddb, DEMO_TABLE);
  await putItems(ddb, DEMO_TABLE, items);
  const expiring = items.filter((i) => i.fate === 'expires');
  const kept = items.filter((i) => i.fate !== 'expires');
  stage(run, 'table', `${DEMO_TABLE}: ${items.length} items`);
  for (const i of items) {
    const mark = i.fate === 'expires' ? s.yellow('will expire') : s.green('must stay ');
    say(run, `           ${mark}  ${i.id.padEnd(11)} ${s.dim(i.why)}`);
  }
  interrupted(run);
  return { items, expiring, kept };
}

/** 3. TTL on, through the settings store (the same path as the API and `ttlstream ttl update`). */
async function enableTtl(run: DemoRun): Promise<void> {
  run.current = 'ttl';
  const store = run.ctx.settingsStore;
  await store.update(DEMO_TABLE, { enabled: true, settings: DEMO_SETTINGS }, 'ttlstream-demo');
  const enabledBy = Date.now() + 15_000;
  for (;;) {
    const d = await store.describe(DEMO_TABLE);
    if (d.status === 'ENABLED') break;
    if (Date.now() > enabledBy) throw new StageFailed('ttl', `TTL still ${d.status} after 15 s`);
    await sleep(200);
  }
  stage(
    run,
    'ttl',
    `ENABLED on ${TTL_ATTRIBUTE} (dynamodb semantics), legal hold attribute ${DEMO_SETTINGS.legalHoldAttribute}`,
  );
  interrupted(run);
}

/** The demo's topics, and its scratch archive started afresh when it is from an earlier topic. */
async function prepareTopics(run: DemoRun): Promise<void> {
  const { ctx, s } = run;
  const config = ctx.config;
  const admin = ctx.kafka('demo-admin').admin();
  await admin.connect();
  try {
    await applyTopics(admin, declaredTopics(config));
    // The demo's archive outlives its topic (a purged or rebuilt stack): an archive that claims
    // offsets the topic does not have would make the archiver refuse it (ARCHIVE LINEAGE). It is
    // the demo's own scratch archive, so start it afresh, with the demo's archiver group.
    if (await demoArchiveIsStale(admin, ctx)) {
      const dir = config.archive.url.replace(/^file:\/\//, '');
      rmSync(dir, { recursive: true, force: true });
      await admin.deleteGroups([config.archive.groupId]).catch(() => undefined);
      say(
        run,
        s.dim(
          `      the demo archive was from an earlier incarnation of ${config.topics.shared}: started afresh`,
        ),
      );
    }
  } finally {
    await admin.disconnect();
  }
}

/** 4. The pipeline, in this process: scanner → producer → Kafka → archiver, plus a consumer to watch. */
async function startPipeline(run: DemoRun, { kept }: Seeded): Promise<Viewed> {
  const { ctx, s, t0 } = run;
  const config = ctx.config;
  run.current = 'pipeline';
  await prepareTopics(run);
  const records = new Map<string, SeenRecord>();
  const unexpected: string[] = [];
  const keptIds = new Set(kept.map((i) => i.id));
  const notTtl: string[] = [];
  run.consumer = await consumeTtlStream({
    kafka: ctx.kafka('demo-viewer'),
    groupId: `ttlstream-demo-viewer-${process.pid}-${randomBytes(3).toString('hex')}`,
    topics: [config.topics.shared],
    fromBeginning: true,
    onRecord: async (record: StreamRecord, meta: { topic: string; partition: number; offset: string }) => {
      if (tableOf(record) !== DEMO_TABLE) return;
      // The topic keeps 24 h of records: skip earlier demo runs.
      if (record.dynamodb.ApproximateCreationDateTime * 1000 < t0 - 5_000) return;
      const id = record.dynamodb.Keys.pk?.S ?? canonicalJson(record.dynamodb.Keys);
      if (!isTtlDelete(record)) notTtl.push(id);
      if (keptIds.has(id)) unexpected.push(id);
      if (!records.has(id)) {
        records.set(id, {
          eventID: record.eventID,
          oldImage: record.dynamodb.OldImage ?? {},
          topic: meta.topic,
          partition: meta.partition,
          offset: String(meta.offset),
        });
        say(
          run,
          `${clock(run)}  ${s.cyan('→ REMOVE  ')} ${id.padEnd(11)} ${s.dim(`${meta.topic} p${meta.partition}@${meta.offset}  eventID ${record.eventID.slice(0, 12)}…  ${record.userIdentity?.type ?? '-'}/${record.userIdentity?.principalId ?? '-'}`)}`,
        );
      }
    },
    onRetraction: async (r: { retractsEventID: string }) => {
      for (const [id, seen] of records) {
        if (seen.eventID === r.retractsEventID) {
          records.delete(id);
          say(
            run,
            `${clock(run)}  ${s.yellow('↺ RETRACT ')} ${id} ${s.dim(`(eventID ${r.retractsEventID.slice(0, 12)}…)`)}`,
          );
        }
      }
    },
  });
  const ownerId = `demo:${hostname()}:${process.pid}`;
  await startRoles(
    ['scanner', 'producer', 'archiver'],
    roleStarters(ctx, ownerId),
    run.coordinator,
    ctx.logger,
  );
  stage(
    run,
    'pipeline',
    `scanner, producer and archiver running in this process; archive ${config.archive.url}`,
  );
  interrupted(run);
  return { records, unexpected, notTtl };
}

/** 5. Watch: deletions in the table, records on Kafka, files in the archive. */
async function watch(run: DemoRun, { items, expiring }: Seeded, { records }: Viewed): Promise<Watched> {
  const { ctx, options, s, t0 } = run;
  const ddb = ctx.ddb;
  run.current = 'watch';
  stage(
    run,
    'watch',
    `expired items disappear, REMOVE records arrive, archive files land (at most ${options.watchTimeoutMs / 1000} s)`,
  );
  const expiringIds = new Set(expiring.map((i) => i.id));
  const storage = openStorage(ctx);
  const catalog = openCatalog(storage);
  const gone = new Set<string>();
  const archivedEvents = new Set<string>();
  const files = new Set<string>();
  const deadline = Date.now() + options.watchTimeoutMs;
  let lastArchivePoll = 0;
  for (;;) {
    interrupted(run);
    const present = await presentIds(
      ddb,
      DEMO_TABLE,
      [...expiringIds].filter((id) => !gone.has(id)),
    );
    for (const id of expiringIds) {
      if (!gone.has(id) && !present.has(id)) {
        gone.add(id);
        say(
          run,
          `${clock(run)}  ${s.red('✗ deleted ')} ${id.padEnd(11)} ${s.dim(items.find((i) => i.id === id)?.why ?? '')}`,
        );
      }
    }
    if (Date.now() - lastArchivePoll > 1000) {
      lastArchivePoll = Date.now();
      const wanted = new Set([...records.values()].map((r) => r.eventID));
      const newFiles = new Map<string, number>();
      for await (const row of catalog.scan(DEMO_TABLE, { fromMs: t0 - 60_000 })) {
        if (row.kind !== 'remove' || !wanted.has(row.eventID) || archivedEvents.has(row.eventID)) continue;
        archivedEvents.add(row.eventID);
        newFiles.set(row.file, (newFiles.get(row.file) ?? 0) + 1);
      }
      for (const [file, n] of newFiles) {
        files.add(file);
        say(
          run,
          `${clock(run)}  ${s.green('▣ archived')} ${s.dim(`${file} (${n} record${n === 1 ? '' : 's'})`)}`,
        );
      }
    }
    const done =
      gone.size === expiringIds.size &&
      [...expiringIds].every((id) => records.has(id)) &&
      [...records.values()].every((r) => archivedEvents.has(r.eventID));
    if (done) break;
    if (Date.now() > deadline) {
      const missing = [
        gone.size < expiringIds.size ? `deleted ${gone.size}/${expiringIds.size}` : '',
        records.size < expiringIds.size ? `records ${records.size}/${expiringIds.size}` : '',
        archivedEvents.size < records.size || records.size < expiringIds.size
          ? `archived ${archivedEvents.size}/${expiringIds.size}`
          : '',
      ].filter(Boolean);
      throw new StageFailed(
        'watch',
        `not everything was seen within ${options.watchTimeoutMs / 1000} s: ${missing.join(', ')}`,
      );
    }
    await sleep(250);
  }
  return { gone, archivedEvents, files, storage };
}

/** 6. Checks: the items that must stay are all there, and no record names one of them. Returns those there. */
async function check(
  run: DemoRun,
  { expiring, kept }: Seeded,
  { unexpected, notTtl }: Viewed,
  { gone }: Watched,
): Promise<Set<string>> {
  const { s } = run;
  const expiringIds = new Set(expiring.map((i) => i.id));
  const keptIds = new Set(kept.map((i) => i.id));
  run.current = 'checks';
  const stillThere = await presentIds(run.ctx.ddb, DEMO_TABLE, [...keptIds]);
  const lost = [...keptIds].filter((id) => !stillThere.has(id));
  if (lost.length > 0)
    throw new StageFailed('checks', `items that must stay were deleted: ${lost.join(', ')}`);
  if (unexpected.length > 0)
    throw new StageFailed('checks', `REMOVE records for items that must stay: ${unexpected.join(', ')}`);
  if (notTtl.length > 0)
    throw new StageFailed('checks', `records without the TTL service identity: ${notTtl.join(', ')}`);
  stage(
    run,
    'checks',
    s.green(
      `${gone.size}/${expiringIds.size} expired items deleted, each with its REMOVE record and archived; ${stillThere.size}/${keptIds.size} others kept`,
    ),
  );
  return stillThere;
}

/** 7. Restore one expired item from the archive, TTL removed so it stays. Returns it. */
async function restoreOne(
  run: DemoRun,
  { expiring }: Seeded,
  { records }: Viewed,
  { storage }: Watched,
): Promise<DemoItem> {
  const { ctx, s } = run;
  const { config, ddb } = ctx;
  const store = ctx.settingsStore;
  run.current = 'restore';
  const chosen = expiring.find((i) => i.id === 'order#1001') ?? (expiring[0] as DemoItem);
  const key = { pk: chosen.item.pk as AttributeValue };
  const result = await restore(
    { storage, ddb, settingsStore: store, logger: ctx.logger },
    { table: DEMO_TABLE, key: canonicalJson(key), ttl: 'remove', overwrite: false, dryRun: false },
  );
  if (result.restored !== 1) {
    throw new StageFailed(
      'restore',
      `restore wrote ${result.restored} items (failed: ${JSON.stringify(result.failed)})`,
    );
  }
  const back = (await ddb.send(new GetItemCommand({ TableName: DEMO_TABLE, Key: key, ConsistentRead: true })))
    .Item;
  if (!back) throw new StageFailed('restore', `${chosen.id} is not in the table after the restore`);
  // Restored = the image announced in its REMOVE record (what was deleted), minus the TTL attribute.
  const expected: Record<string, unknown> = { ...(records.get(chosen.id)?.oldImage ?? {}) };
  delete expected[TTL_ATTRIBUTE];
  if (canonicalJson(back) !== canonicalJson(expected)) {
    throw new StageFailed(
      'restore',
      `${chosen.id} came back different from its deleted image: ${canonicalJson(back)} vs ${canonicalJson(expected)}`,
    );
  }
  // A restored item must not be deleted again by the next scanner pass.
  await sleep(config.scanner.passIntervalMs * 4 + 1000);
  const after = await presentIds(ddb, DEMO_TABLE, [chosen.id]);
  if (!after.has(chosen.id))
    throw new StageFailed('restore', `${chosen.id} was deleted again after the restore`);
  stage(
    run,
    'restore',
    s.green(`${chosen.id} is back in ${DEMO_TABLE} (its TTL attribute removed so it stays)`),
  );
  say(run, `           ${s.dim(canonicalJson(back))}`);
  return chosen;
}

/** The summary, and commands to explore what the demo left. */
function summarise(
  run: DemoRun,
  { items }: Seeded,
  { records }: Viewed,
  { gone, files }: Watched,
  stillThere: Set<string>,
  chosen: DemoItem,
): void {
  const { ctx, s, t0 } = run;
  const config = ctx.config;
  const configFile = writeDemoConfig();
  // The printed commands use the same stack: its endpoints file is read only when named.
  const stackDir = ctx.globals.localStack;
  const cli =
    cliInvocation() +
    (stackDir !== undefined ? ` --local-stack ${relative(process.cwd(), stackDir) || stackDir}` : '');
  const archiveDir = config.archive.url.replace(/^file:\/\//, '');
  say(run);
  say(run, s.bold('Summary'));
  say(
    run,
    `  items       ${items.length} seeded; ${gone.size} expired and deleted; ${stillThere.size} kept (future, invalid TTL, no TTL, legal hold)`,
  );
  say(
    run,
    `  records     ${records.size} REMOVE records on ${config.topics.shared} (userIdentity Service/dynamodb.amazonaws.com)`,
  );
  say(run, `  archive     ${files.size} file(s) with this run's records under ${archiveDir}`);
  say(run, `  restored    ${chosen.id}`);
  say(run, `  took        ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  say(run);
  say(run, s.bold('Explore'));
  say(run, `  ${cli} --config ${configFile} archive ls`);
  say(run, `  ${cli} --config ${configFile} archive show --table ${DEMO_TABLE}`);
  say(run, `  ${cli} --config ${configFile} ttl describe --table ${DEMO_TABLE}`);
  say(run, `  ${cli} --config ${configFile} preview --table ${DEMO_TABLE} --within 2d`);
  say(run);
  say(run, `The local stack is still running; stop it with: ${s.bold('npm run infra:down')}`);
}

/** The demo's overrides as a config file, so the commands printed at the end look at the same places. */
function writeDemoConfig(): string {
  const dir = dirname(stackEndpointsPath());
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'demo-config.json');
  writeFileSync(file, JSON.stringify(demoOverrides(dir), null, 2) + '\n');
  const rel = relative(process.cwd(), file);
  return rel.startsWith('..') ? file : rel;
}

/**
 * How to run this same ttlstream from the user's shell, for the lines printed at the end. `npm run demo` runs on a Node
 * that scripts/with-node.sh may have installed into the checkout because the machine's own is too old for ttlstream:
 * then the lines name that binary, so that they work when pasted into the shell the user started from.
 */
function cliInvocation(): string {
  if (!__filename.endsWith('.js')) return 'npx tsx cli/main.ts';
  const main = join(__dirname, '..', 'main.js');
  const fromCwd = (path: string): string => {
    const rel = relative(process.cwd(), path);
    return rel === '' || rel.startsWith('..') ? path : rel;
  };
  const node = fromCwd(process.execPath) === process.execPath ? 'node' : fromCwd(process.execPath);
  return `${node} ${fromCwd(main)}`;
}

/** Whether the demo's archive (or its archiver group) claims offsets the demo topic does not have. */
async function demoArchiveIsStale(admin: Admin, ctx: CliContext): Promise<boolean> {
  const config = ctx.config;
  const topic = config.topics.shared;
  const storage = openStorage(ctx);
  const groupOffsets = await admin.fetchOffsets({ groupId: config.archive.groupId, topics: [topic] });
  const committed = new Map((groupOffsets[0]?.partitions ?? []).map((p) => [p.partition, p.offset]));
  for (const { partition, high } of await admin.fetchTopicOffsets(topic)) {
    const offset = committedOffsetOf(committed.get(partition));
    const history = await readPartitionHistory(storage, topic, partition, offset, silentLogger);
    if (claimBeyondTopic(offset, history, BigInt(high)) !== null) return true;
  }
  return false;
}
