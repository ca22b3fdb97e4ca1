import { DeleteItemCommand, PutItemCommand, ScanCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { LeaseLostError } from '../../../core/errors';
import { startLeaseGroup, type LeaseGroup, type LeaseHandle } from '../../../core/leases';
import { silentLogger } from '../../../core/logger';
import { ensureInternalTable } from '../../../core/tables';
import { createEnv, pipelineConfig, type Env } from '../../support/pipeline-harness';
import { waitFor } from '../../support/wait-for';

const names = Array.from({ length: 8 }, (_, i) => `unit#${i}`);
const LEASE_MS = 1500;

/** Work that runs until its lease ends and records why it ended. */
function recorder() {
  const running = new Set<string>();
  const ended: Array<{ name: string; reason: unknown }> = [];
  const work = async (lease: LeaseHandle): Promise<void> => {
    running.add(lease.name);
    await new Promise<void>((resolve) => lease.signal.addEventListener('abort', () => resolve()));
    running.delete(lease.name);
    ended.push({ name: lease.name, reason: lease.signal.reason });
  };
  return { running, ended, work };
}

describe('leases against the real DynamoDB API', () => {
  let env: Env;
  const groups: LeaseGroup[] = [];

  beforeAll(async () => {
    env = await createEnv(pipelineConfig());
    await ensureInternalTable(env.ddb, env.config.tables.control);
  });
  afterAll(async () => {
    for (const g of groups) await g.stop();
    await env.cleanup();
  });

  function start(owner: string, work: (l: LeaseHandle) => Promise<void>): LeaseGroup {
    const g = startLeaseGroup({
      ddb: env.ddb,
      table: env.config.tables.control,
      kind: 'test',
      ownerId: owner,
      leaseMs: LEASE_MS,
      logger: silentLogger,
      names: () => names,
      work,
    });
    groups.push(g);
    return g;
  }

  it('balances between two owners, takes over a dead owner only after expiry, stops work on a stolen lease', async () => {
    // A dead owner's leases on half the units, expiring a little later.
    const deadUntil = Date.now() + 2500;
    for (const name of names.slice(0, 4)) {
      await env.ddb.send(
        new PutItemCommand({
          TableName: env.config.tables.control,
          Item: {
            pk: { S: `lease#test#${name}` },
            owner: { S: 'dead' },
            expiresAt: { N: String(deadUntil) },
          },
        }),
      );
    }
    const a = recorder();
    const ga = start('a', a.work);
    await waitFor('a to take the free half', async () => a.running.size === 4, 10_000);
    expect([...a.running].sort()).toEqual(names.slice(4).sort());
    await waitFor('a to take over the dead half', async () => a.running.size === 8, 10_000);
    expect(Date.now()).toBeGreaterThanOrEqual(deadUntil);

    // A second owner arrives: a hands half over (work ends with reason 'rebalance'), b takes it.
    const b = recorder();
    start('b', b.work);
    await waitFor('balance 4/4', async () => a.running.size === 4 && b.running.size === 4, 15_000);
    expect(a.ended.every((e) => String(e.reason).includes('rebalance'))).toBe(true);
    expect(new Set([...a.running, ...b.running]).size).toBe(8);

    // Someone else overwrites one of a's rows: a's next renewal fails and that work stops as lost.
    const victim = [...a.running][0] as string;
    await env.ddb.send(
      new UpdateItemCommand({
        TableName: env.config.tables.control,
        Key: { pk: { S: `lease#test#${victim}` } },
        UpdateExpression: 'SET #o = :thief, expiresAt = :e',
        ExpressionAttributeNames: { '#o': 'owner' },
        ExpressionAttributeValues: { ':thief': { S: 'thief' }, ':e': { N: String(Date.now() + 60_000) } },
      }),
    );
    await waitFor('the stolen lease to stop', async () => !a.running.has(victim), 5_000);
    const lost = a.ended.find((e) => e.name === victim && String(e.reason).includes('lost'));
    expect(lost?.reason).toBeInstanceOf(LeaseLostError);
    expect(ga.held()).not.toContain(victim);

    // The thief goes away; a stops gracefully and deletes its rows instead of letting them expire; b takes all.
    await env.ddb.send(
      new DeleteItemCommand({
        TableName: env.config.tables.control,
        Key: { pk: { S: `lease#test#${victim}` } },
      }),
    );
    await ga.stop();
    const rows = await env.ddb.send(
      new ScanCommand({ TableName: env.config.tables.control, ConsistentRead: true }),
    );
    const owners = (rows.Items ?? [])
      .filter((r) => r.pk?.S?.startsWith('lease#test#'))
      .map((r) => r.owner?.S);
    expect(owners).not.toContain('a');
    expect((rows.Items ?? []).some((r) => r.pk?.S === 'member#test#a')).toBe(false);
    await waitFor('b to hold everything', async () => b.running.size === 8, 10_000);
  });
});
