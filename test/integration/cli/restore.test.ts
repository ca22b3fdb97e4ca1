import { GetItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsArchiveStorage } from '../../../archive/storage';
import { createDynamoClient } from '../../../core/clients';
import type { Item } from '../../../policy';
import { DYNAMO_SERVERS, caseOn, serverConfig, serverEnv } from '../../support/dynamodb-servers';
import { createTestTable, deleteTestTable, uniqueName } from '../../support/stack';
import { runCli } from '../../support/cli-process';
import { removeRow, writeRoll } from '../../support/archive-fixture';

/**
 * `ttlstream restore --ttl-attribute`: restoring into another table, whose TTL settings (and the source's) are not
 * known to ttlstream, the operator names the TTL attribute so `--ttl remove|extend=|keep` can act on it.
 */
describe.each(DYNAMO_SERVERS)('ttlstream restore --ttl-attribute (%s, file archive)', (server) => {
  const source = uniqueName('cli-rst-src'); // only in the archive: the table itself is gone
  const control = uniqueName('cli-rst-ctl');
  const dir = mkdtempSync(join(tmpdir(), 'ttlstream-cli-restore-'));
  const nowS = Math.floor(Date.now() / 1000);
  const expiredAt = nowS - 7200;
  let ddb: DynamoDBClient;
  let env: NodeJS.ProcessEnv;
  const tables: string[] = [];

  beforeAll(async () => {
    ddb = createDynamoClient(serverConfig(server));
    const k = (pk: string): Item => ({ pk: { S: pk } });
    const image = (n: number): Item => ({ expiresAt: { N: String(expiredAt) }, note: { S: `v${n}` } });
    await writeRoll(new FsArchiveStorage(dir), [
      removeRow({ table: source, keys: k('user#1'), image: image(1), deletedAtS: expiredAt + 60 }),
      removeRow({ table: source, keys: k('user#2'), image: image(2), deletedAtS: expiredAt + 61 }),
      removeRow({ table: source, keys: k('user#3'), image: image(3), deletedAtS: expiredAt + 62 }),
    ]);
    env = {
      ...serverEnv(server),
      TTLSTREAM_ARCHIVE_URL: `file://${dir}`,
      TTLSTREAM_TABLES_CONTROL: control,
      TTLSTREAM_API_TTL_PROPAGATION_MS: '200',
    };
  });
  afterAll(async () => {
    for (const t of [...tables, control]) await deleteTestTable(ddb, t);
    ddb.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  // On moto, the first case and the one with the target's TTL settings: they write through it and read the settings
  // from its control table; the others vary how ttlstream treats the attribute, which the server does not change.
  const ownLogic = caseOn(server, { moto: "--ttl handling is ttlstream's own: dynalite's run covers it" });

  async function target(): Promise<string> {
    const name = await createTestTable(ddb, uniqueName('cli-rst-dst'));
    tables.push(name);
    return name;
  }

  async function get(table: string, pk: string): Promise<Item | undefined> {
    const out = await ddb.send(
      new GetItemCommand({ TableName: table, Key: { pk: { S: pk } }, ConsistentRead: true }),
    );
    return out.Item;
  }

  const restore = (t: string, pk: string, ...extra: string[]) =>
    runCli(
      [
        'restore',
        '--table',
        source,
        '--target-table',
        t,
        '--key',
        `{"pk":{"S":"${pk}"}}`,
        '--json',
        ...extra,
      ],
      env,
    );

  it('remove (the default) drops the named attribute, so the restored item does not expire again', async () => {
    const t = await target();
    const r = await restore(t, 'user#1', '--ttl-attribute', 'expiresAt');
    expect(r.stderr).not.toMatch(/ttlstream: /);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ restored: 1, expiresAgain: 0, failed: [] });
    expect(await get(t, 'user#1')).toEqual({ pk: { S: 'user#1' }, note: { S: 'v1' } });
  });

  ownLogic('extend=<seconds> sets the named attribute that far from now', async () => {
    const t = await target();
    const r = await restore(t, 'user#2', '--ttl-attribute', 'expiresAt', '--ttl', 'extend=3600');
    expect(r.code).toBe(0);
    const item = await get(t, 'user#2');
    const at = Number(item?.expiresAt?.N);
    expect(at).toBeGreaterThanOrEqual(nowS + 3600);
    expect(at).toBeLessThan(nowS + 3600 + 120);
    expect(item?.note).toEqual({ S: 'v2' });
  });

  ownLogic('keep judges the named attribute: the item is reported as expiring again', async () => {
    const t = await target();
    const r = await restore(t, 'user#3', '--ttl-attribute', 'expiresAt', '--ttl', 'keep');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ restored: 1, expiresAgain: 1 });
    expect((await get(t, 'user#3'))?.expiresAt).toEqual({ N: String(expiredAt) });
  });

  it("it wins over the target table's TTL settings", async () => {
    const t = await target();
    const enable = await runCli(['ttl', 'update', '--table', t, '--enable', '--attribute', 'other'], env);
    expect(enable.code).toBe(0);
    await new Promise((r) => setTimeout(r, 500)); // ENABLING → ENABLED
    // By the settings, remove would drop `other` and keep the expired expiresAt; the flag says which it is.
    const r = await restore(t, 'user#1', '--ttl-attribute', 'expiresAt');
    expect(r.code).toBe(0);
    expect(await get(t, 'user#1')).toEqual({ pk: { S: 'user#1' }, note: { S: 'v1' } });
    const bySettings = await restore(t, 'user#2', '--dry-run');
    const { wouldWrite } = JSON.parse(bySettings.stdout) as { wouldWrite: Array<{ item: Item }> };
    expect(wouldWrite[0]?.item.expiresAt).toEqual({ N: String(expiredAt) });
  });

  ownLogic('without it, the TTL attribute of the deleted image is left as it was', async () => {
    // Neither table has TTL settings in ttlstream: restore() cannot know which attribute --ttl remove means.
    const t = await target();
    const r = await restore(t, 'user#1', '--dry-run');
    expect(r.code).toBe(0);
    const { wouldWrite } = JSON.parse(r.stdout) as { wouldWrite: Array<{ item: Item }> };
    expect(wouldWrite[0]?.item.expiresAt).toEqual({ N: String(expiredAt) });
  });

  ownLogic(
    'a key that cannot match says why (the archived key schema); --fail-if-empty exits 3',
    async () => {
      const t = await target();
      const wrong = await runCli(
        [
          'restore',
          '--table',
          source,
          '--target-table',
          t,
          '--key',
          '{"id":{"S":"user#1"}}',
          '--ttl-attribute',
          'expiresAt',
        ],
        env,
      );
      expect(wrong.code).toBe(0);
      expect(wrong.stdout).toMatch(/^restored 0 item\(s\)/);
      expect(wrong.stderr).toContain(
        `ttlstream: nothing matched: key id (S) cannot match: ${source}'s archived keys are pk (S)`,
      );
      const strict = await runCli(
        [
          'restore',
          '--table',
          source,
          '--target-table',
          t,
          '--key',
          '{"pk":{"S":"user#9"}}',
          '--ttl-attribute',
          'expiresAt',
          '--fail-if-empty',
        ],
        env,
      );
      expect(strict.code).toBe(3);
      expect(strict.stderr).toContain(`no archived deletion of that key of ${source}`);
    },
  );
});
