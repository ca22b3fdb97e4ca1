import { BatchWriteItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDynamoClient } from '../../../core/clients';
import { createTestTable, deleteTestTable, scanTable, testConfig, uniqueName } from '../../support/stack';
import { freePort, runCli, spawnCli } from '../../support/cli-process';

type Item = Record<string, AttributeValue>;
type Child = ReturnType<typeof spawnCli>;

/** The archiver's consumer-group session: what a restart after SIGKILL waits out before it rejoins. */
const SESSION_MS = 30_000;
const TOKEN = 'restart-token-0123456789';

/** Structured log lines at error level or above (pino: error 50, fatal 60). */
function errorLines(output: string): string[] {
  return output.split('\n').filter((l) => {
    if (!l.startsWith('{')) return false;
    try {
      return (JSON.parse(l) as { level?: number }).level! >= 50;
    } catch {
      return false;
    }
  });
}

/**
 * With every role in one process, a restart after SIGKILL used to hold the scanner and
 * producer until the archiver had rejoined its group, i.e. until the dead member's session timed out
 * (30 s): no deletion meanwhile. Now the roles start independently; deletions resume while the archiver
 * is still joining. And normal restarts log no error-level line (kafkajs's rebalance responses are warn).
 */
describe('ttlstream run: restarts', () => {
  const table = uniqueName('restart');
  const control = uniqueName('restart-ctl');
  const marks = uniqueName('restart-marks');
  const topic = uniqueName('restart-rm');
  const archiveDir = mkdtempSync(join(tmpdir(), 'ttlstream-restart-'));
  let env: NodeJS.ProcessEnv;
  let ddb: DynamoDBClient;
  const children: Child[] = [];

  const start = (extra: NodeJS.ProcessEnv = {}): Child => {
    const child = spawnCli(['run', '--shutdown-timeout', '20s'], { ...env, ...extra });
    children.push(child);
    return child;
  };

  /** Expired items with ids `<prefix><n>`, written while no pipeline runs. */
  const putExpired = async (prefix: string, n: number): Promise<void> => {
    const now = Math.floor(Date.now() / 1000);
    const items: Item[] = Array.from({ length: n }, (_, i) => ({
      pk: { S: `${prefix}${i}` },
      exp: { N: String(now - 60) },
    }));
    for (let i = 0; i < items.length; i += 25) {
      let request: Record<string, Array<{ PutRequest: { Item: Item } }>> = {
        [table]: items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })),
      };
      while (Object.keys(request).length > 0) {
        const out = await ddb.send(new BatchWriteItemCommand({ RequestItems: request }));
        request = (out.UnprocessedItems ?? {}) as typeof request;
      }
    }
  };

  const remaining = async (prefix: string): Promise<number> =>
    (await scanTable(ddb, table)).filter((i) => i.pk?.S?.startsWith(prefix)).length;

  /** Resolves with the time at which `check` first held. */
  const whenSeen = async (
    what: string,
    child: Child,
    check: () => Promise<boolean> | boolean,
    ms = 90_000,
  ) => {
    const deadline = Date.now() + ms;
    for (;;) {
      if (await check()) return Date.now();
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`${what}: not seen within ${ms} ms\n${child.output().slice(-4000)}`);
      await sleep(100);
    }
  };
  const archiverJoined = (child: Child) => child.output().includes('"msg":"partitions assigned"');

  beforeAll(async () => {
    const config = testConfig();
    ddb = createDynamoClient(config);
    env = {
      TTLSTREAM_LOG_LEVEL: 'info',
      TTLSTREAM_API_PORT: String(await freePort()),
      TTLSTREAM_API_TOKENS: TOKEN,
      TTLSTREAM_TABLES_CONTROL: control,
      TTLSTREAM_TABLES_MARKS: marks,
      TTLSTREAM_TOPICS_SHARED: topic,
      TTLSTREAM_TOPICS_DEAD_LETTER: `${topic}-dlq`,
      TTLSTREAM_TOPICS_PARTITIONS: '3',
      TTLSTREAM_ARCHIVE_URL: `file://${archiveDir}`,
      TTLSTREAM_ARCHIVE_GROUP_ID: `${topic}-archiver`,
      TTLSTREAM_ARCHIVE_ROLL_MS: '1000',
      TTLSTREAM_API_TTL_PROPAGATION_MS: '0',
      TTLSTREAM_SCANNER_TOTAL_SEGMENTS: '2',
      // A dead process's leases pass to the next one after this; the archiver's session stays at 30 s.
      TTLSTREAM_SCANNER_LEASE_MS: '2000',
      TTLSTREAM_SCANNER_PASS_INTERVAL_MS: '200',
      TTLSTREAM_PRODUCER_SHARDS: '4',
      TTLSTREAM_PRODUCER_LEASE_MS: '2000',
      TTLSTREAM_PRODUCER_POLL_MS: '50',
      TTLSTREAM_GUARD_MAX_EXPIRED_FRACTION: '1',
      TTLSTREAM_GUARD_MIN_ITEMS_FOR_FRACTION: '1000000',
    };
    await createTestTable(ddb, table);
    const enable = await runCli(['ttl', 'update', '--table', table, '--enable', '--attribute', 'exp'], env);
    expect(enable.code).toBe(0);
  });

  afterEach(async () => {
    for (const child of children.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await child.result;
      }
    }
  });

  afterAll(async () => {
    for (const t of [table, control, marks]) await deleteTestTable(ddb, t);
    ddb.destroy();
    rmSync(archiveDir, { recursive: true, force: true });
  });

  it('a clean restart of every role logs no error-level line, in the restarted process or a peer', async () => {
    // A peer running every role too (a scaled-out deployment): each restart of the other process
    // rebalances the archivers' group under it, and kafkajs answers its heartbeats with "The group is
    // rebalancing" (kafkajs logs it at error; ttlstream logs it at warn).
    const peer = start({ TTLSTREAM_API_PORT: String(await freePort()) });
    await whenSeen("the peer's archiver in the group", peer, () => archiverJoined(peer));
    for (const round of ['a', 'b']) {
      await putExpired(round, 20);
      const child = start();
      await whenSeen(
        `round ${round}: deletions and the archiver's group join`,
        child,
        async () => archiverJoined(child) && (await remaining(round)) === 0,
      );
      child.kill('SIGTERM');
      const result = await child.result;
      expect({ round, code: result.code }).toEqual({ round, code: 0 });
      expect({ round, errors: errorLines(result.stderr) }).toEqual({ round, errors: [] });
    }
    peer.kill('SIGTERM');
    const peerResult = await peer.result;
    expect(peerResult.code).toBe(0);
    expect(peerResult.stderr).toContain('The group is rebalancing'); // the condition did occur
    expect(errorLines(peerResult.stderr)).toEqual([]);
  });

  it('after SIGKILL, deletions resume while the archiver is still waiting to rejoin its group', async () => {
    const first = start();
    await putExpired('k', 20);
    await whenSeen(
      'first run working',
      first,
      async () => archiverJoined(first) && (await remaining('k')) === 0,
    );
    first.kill('SIGKILL');
    await first.result;

    await putExpired('r', 50);
    const restartedAt = Date.now();
    const second = start();
    const firstDeletionAt = await whenSeen(
      'a deletion after the restart',
      second,
      async () => (await remaining('r')) < 50,
    );
    const joinedBefore = archiverJoined(second);
    const seconds = (firstDeletionAt - restartedAt) / 1000;
    // The measurement the issue asks for (restart → first deletion), printed for the report.
    process.stdout.write(`restart after SIGKILL → first deletion: ${seconds.toFixed(1)} s\n`);
    expect({ seconds: seconds < SESSION_MS / 1000, archiverStillJoining: !joinedBefore }).toEqual({
      seconds: true,
      archiverStillJoining: true,
    });

    // The archiver does rejoin once the dead member's session is over, and archives.
    await whenSeen('the archiver rejoining', second, () => archiverJoined(second), SESSION_MS + 60_000);
    await whenSeen('every r item deleted', second, async () => (await remaining('r')) === 0);
    second.kill('SIGTERM');
    const result = await second.result;
    expect(result.code).toBe(0);
    expect(errorLines(result.stderr)).toEqual([]);
  });

  // Leases of twice the default, so that a start-up slowed by a loaded machine cannot pass for a lease taken back.
  const LONG_LEASE_MS = 20_000;
  it.each([
    ["on the same machine, without configuration, it takes the killed process's leases at once", 'u', {}],
    [
      'with a stable instanceId, it takes its own leases back without waiting them out',
      't',
      { TTLSTREAM_INSTANCE_ID: uniqueName('instance') },
    ],
  ])('restart after SIGKILL: %s', async (how, prefix, identity: NodeJS.ProcessEnv) => {
    const leases = {
      ...identity,
      TTLSTREAM_SCANNER_LEASE_MS: String(LONG_LEASE_MS),
      TTLSTREAM_PRODUCER_LEASE_MS: String(LONG_LEASE_MS),
    };
    const first = start(leases);
    await putExpired(`${prefix}0-`, 20);
    await whenSeen(
      'first run working',
      first,
      async () => archiverJoined(first) && (await remaining(`${prefix}0-`)) === 0,
    );
    first.kill('SIGKILL');
    await first.result;
    const killedAt = Date.now();

    await putExpired(`${prefix}1-`, 50);
    const restartedAt = Date.now();
    const second = start(leases);
    const firstDeletionAt = await whenSeen(
      'a deletion after the restart',
      second,
      async () => (await remaining(`${prefix}1-`)) < 50,
    );
    process.stdout.write(
      `restart after SIGKILL (${how}) → first deletion: ${((firstDeletionAt - restartedAt) / 1000).toFixed(1)} s\n`,
    );
    // The killed process's leases would have run until killedAt + LONG_LEASE_MS.
    expect(firstDeletionAt).toBeLessThan(killedAt + LONG_LEASE_MS);
    await whenSeen(
      `every ${prefix}1- item deleted`,
      second,
      async () => (await remaining(`${prefix}1-`)) === 0,
    );
    second.kill('SIGTERM');
    expect((await second.result).code).toBe(0);
  });
});
