import {
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  ListTablesCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { deleteTestTable, newTable, uniqueName } from '../../support/stack';
import { AWS_KEY, http, startControlPlane, waitUntil, type ControlPlane } from './control-plane.support';

/**
 * The official AWS SDK, pointed at the control plane, manages ttlstream TTL with the ordinary
 * UpdateTimeToLive / DescribeTimeToLive commands, signed with SigV4.
 */
describe('DynamoDB-compatible TTL endpoint with the AWS SDK', () => {
  let cp: ControlPlane;
  const clients: DynamoDBClient[] = [];
  const tables: string[] = [];

  const sdk = (credentials = AWS_KEY) => {
    const client = new DynamoDBClient({
      endpoint: cp.base,
      region: cp.config.region,
      credentials,
      maxAttempts: 1,
    });
    clients.push(client);
    return client;
  };
  const errorOf = async (p: Promise<unknown>) => {
    try {
      await p;
    } catch (err) {
      return err as Error & { $metadata?: { httpStatusCode?: number } };
    }
    throw new Error('expected the call to fail');
  };

  beforeAll(async () => {
    cp = await startControlPlane({ propagationMs: 2000 }); // outlasts any request of a loaded machine
  });
  afterAll(async () => {
    for (const c of clients) c.destroy();
    for (const t of [...tables, cp.config.tables.control]) await deleteTestTable(cp.ddb, t);
    await cp.close();
  });

  it('enables, describes and disables TTL with signed SDK calls', async () => {
    const table = await newTable(cp.ddb, 'aws', tables);
    const client = sdk();
    const described = await client.send(new DescribeTimeToLiveCommand({ TableName: table }));
    expect(described.TimeToLiveDescription).toEqual({ TimeToLiveStatus: 'DISABLED' });

    const updated = await client.send(
      new UpdateTimeToLiveCommand({
        TableName: table,
        TimeToLiveSpecification: { Enabled: true, AttributeName: 'expiresAt' },
      }),
    );
    expect(updated.TimeToLiveSpecification).toEqual({ Enabled: true, AttributeName: 'expiresAt' });
    expect(updated.$metadata.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(
      (await client.send(new DescribeTimeToLiveCommand({ TableName: table }))).TimeToLiveDescription,
    ).toEqual({
      TimeToLiveStatus: 'ENABLING',
      AttributeName: 'expiresAt',
    });

    // Same as DynamoDB: a second change inside the interval is a ValidationException.
    const busy = await errorOf(
      client.send(
        new UpdateTimeToLiveCommand({
          TableName: table,
          TimeToLiveSpecification: { Enabled: false, AttributeName: 'expiresAt' },
        }),
      ),
    );
    expect(busy.name).toBe('ValidationException');
    expect(busy.message).toBe('Time to live has been modified multiple times within a fixed interval');

    const desc = await cp.store.describe(table);
    expect(desc).toMatchObject({
      settings: { policy: { mode: 'dynamodb', attributeName: 'expiresAt' } },
      changedBy: `aws:${AWS_KEY.accessKeyId}`,
    });
    await waitUntil(desc.statusSettlesAt);
    expect(
      (await client.send(new DescribeTimeToLiveCommand({ TableName: table }))).TimeToLiveDescription
        ?.TimeToLiveStatus,
    ).toBe('ENABLED');

    const wrongAttr = await errorOf(
      client.send(
        new UpdateTimeToLiveCommand({
          TableName: table,
          TimeToLiveSpecification: { Enabled: true, AttributeName: 'other' },
        }),
      ),
    );
    expect(wrongAttr.name).toBe('ValidationException');
    expect(wrongAttr.message).toBe(
      'TimeToLive is active on a different AttributeName: current AttributeName is expiresAt',
    );

    // DynamoDB refuses an update that changes nothing.
    const again = await errorOf(
      client.send(
        new UpdateTimeToLiveCommand({
          TableName: table,
          TimeToLiveSpecification: { Enabled: true, AttributeName: 'expiresAt' },
        }),
      ),
    );
    expect([again.name, again.message]).toEqual(['ValidationException', 'TimeToLive is already enabled']);

    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: table,
        TimeToLiveSpecification: { Enabled: false, AttributeName: 'expiresAt' },
      }),
    );
    expect(
      (await client.send(new DescribeTimeToLiveCommand({ TableName: table }))).TimeToLiveDescription,
    ).toEqual({
      TimeToLiveStatus: 'DISABLING',
      AttributeName: 'expiresAt',
    });
  });

  it('answers disabling a disabled table with TimeToLive is already disabled', async () => {
    const table = await newTable(cp.ddb, 'aws', tables);
    const err = await errorOf(
      sdk().send(
        new UpdateTimeToLiveCommand({
          TableName: table,
          TimeToLiveSpecification: { Enabled: false, AttributeName: 'exp' },
        }),
      ),
    );
    expect([err.name, err.message]).toEqual(['ValidationException', 'TimeToLive is already disabled']);
    const short = await errorOf(sdk().send(new DescribeTimeToLiveCommand({ TableName: 'ab' })));
    expect([short.name, short.message]).toEqual([
      'ValidationException',
      "1 validation error detected: Value 'ab' at 'tableName' failed to satisfy constraint: Member must have length greater than or equal to 3",
    ]);
  });

  it('with api.awsIdempotentUpdates, re-enabling the same attribute succeeds and keeps a legal hold and the expiry index set through REST', async () => {
    const table = await newTable(cp.ddb, 'aws', tables);
    const lenient = await startControlPlane({ propagationMs: 300, api: { awsIdempotentUpdates: true } });
    const client = new DynamoDBClient({
      endpoint: lenient.base,
      region: lenient.config.region,
      credentials: AWS_KEY,
      maxAttempts: 1,
    });
    clients.push(client);
    try {
      await lenient.store.update(
        table,
        {
          enabled: true,
          settings: {
            policy: { mode: 'dynamodb', attributeName: 'exp' },
            legalHoldAttribute: 'hold',
            expiryIndex: { shards: 4 },
          },
        },
        'rest',
      );
      await waitUntil((await lenient.store.describe(table)).statusSettlesAt);
      await client.send(
        new UpdateTimeToLiveCommand({
          TableName: table,
          TimeToLiveSpecification: { Enabled: true, AttributeName: 'exp' },
        }),
      );
      expect((await lenient.store.describe(table)).settings).toEqual({
        policy: { mode: 'dynamodb', attributeName: 'exp' },
        legalHoldAttribute: 'hold',
        expiryIndex: { shards: 4 },
      });
      // DescribeTimeToLive answers as DynamoDB does: no field of ttlstream's own (decision 0019).
      const described = await client.send(new DescribeTimeToLiveCommand({ TableName: table }));
      expect(described.TimeToLiveDescription).toEqual({ TimeToLiveStatus: 'ENABLED', AttributeName: 'exp' });
    } finally {
      await deleteTestTable(lenient.ddb, lenient.config.tables.control);
      await lenient.close();
    }
  });

  it('keeps a legal hold set through REST when the AWS API re-enables the same attribute', async () => {
    const table = await newTable(cp.ddb, 'aws', tables);
    await cp.store.update(
      table,
      {
        enabled: true,
        settings: { policy: { mode: 'dynamodb', attributeName: 'exp' }, legalHoldAttribute: 'hold' },
      },
      'rest',
    );
    await waitUntil((await cp.store.describe(table)).statusSettlesAt);
    const err = await errorOf(
      sdk().send(
        new UpdateTimeToLiveCommand({
          TableName: table,
          TimeToLiveSpecification: { Enabled: true, AttributeName: 'exp' },
        }),
      ),
    );
    expect(err.message).toBe('TimeToLive is already enabled');
    expect((await cp.store.describe(table)).settings).toEqual({
      policy: { mode: 'dynamodb', attributeName: 'exp' },
      legalHoldAttribute: 'hold',
    });
  });

  it('never drops the legal hold, archive retention or expiry index when the AWS API disables and re-enables', async () => {
    const table = await newTable(cp.ddb, 'aws', tables);
    const full = {
      policy: { mode: 'dynamodb' as const, attributeName: 'exp' },
      legalHoldAttribute: 'hold',
      archiveRetentionDays: 30,
      expiryIndex: { shards: 4 },
    };
    await cp.store.update(table, { enabled: true, settings: full }, 'rest');
    await waitUntil((await cp.store.describe(table)).statusSettlesAt);
    const send = (Enabled: boolean, AttributeName: string) =>
      sdk().send(
        new UpdateTimeToLiveCommand({
          TableName: table,
          TimeToLiveSpecification: { Enabled, AttributeName },
        }),
      );
    await send(false, 'exp');
    await waitUntil((await cp.store.describe(table)).statusSettlesAt);
    await send(true, 'exp');
    expect((await cp.store.describe(table)).settings).toEqual(full);

    // Another attribute: the hold and the index belonged to the old policy; the archive retention stays.
    await waitUntil((await cp.store.describe(table)).statusSettlesAt);
    await send(false, 'exp');
    await waitUntil((await cp.store.describe(table)).statusSettlesAt);
    await send(true, 'other');
    expect((await cp.store.describe(table)).settings).toEqual({
      policy: { mode: 'dynamodb', attributeName: 'other' },
      archiveRetentionDays: 30,
    });
  });

  it('answers an unknown table with ResourceNotFoundException', async () => {
    const err = await errorOf(sdk().send(new DescribeTimeToLiveCommand({ TableName: uniqueName('gone') })));
    expect(err.name).toBe('ResourceNotFoundException');
    expect(err.$metadata?.httpStatusCode).toBe(400);
  });

  it('rejects a wrong secret with InvalidSignatureException and changes nothing', async () => {
    const table = await newTable(cp.ddb, 'aws', tables);
    const err = await errorOf(
      sdk({ accessKeyId: AWS_KEY.accessKeyId, secretAccessKey: 'not-the-secret-0000000000' }).send(
        new UpdateTimeToLiveCommand({
          TableName: table,
          TimeToLiveSpecification: { Enabled: true, AttributeName: 'exp' },
        }),
      ),
    );
    expect(err.name).toBe('InvalidSignatureException');
    expect(err.message).toContain('The request signature we calculated does not match');
    expect(err.$metadata?.httpStatusCode).toBe(400);
    expect((await cp.store.describe(table)).status).toBe('DISABLED');
  });

  it('rejects an unknown access key with UnrecognizedClientException', async () => {
    const table = await newTable(cp.ddb, 'aws', tables);
    const err = await errorOf(
      sdk({ accessKeyId: 'AKIDNOBODY', secretAccessKey: AWS_KEY.secretAccessKey }).send(
        new UpdateTimeToLiveCommand({
          TableName: table,
          TimeToLiveSpecification: { Enabled: true, AttributeName: 'exp' },
        }),
      ),
    );
    expect(err.name).toBe('UnrecognizedClientException');
    expect(err.message).toBe('The security token included in the request is invalid.');
    expect((await cp.store.describe(table)).status).toBe('DISABLED');
  });

  it('answers other operations with UnknownOperationException', async () => {
    const err = await errorOf(sdk().send(new ListTablesCommand({})));
    expect(err.name).toBe('UnknownOperationException');
  });

  it('lets an unsigned DescribeTimeToLive through when reads are open, never an unsigned update', async () => {
    const table = await newTable(cp.ddb, 'aws', tables);
    const open = await startControlPlane({ api: { openReads: true } });
    try {
      await unsignedCalls(open, table);
    } finally {
      await open.close();
    }
  });

  const unsignedCalls = async (cp: ControlPlane, table: string): Promise<void> => {
    const headers = { 'content-type': 'application/x-amz-json-1.0' };
    const describe = await http(cp.base, 'POST', '/', {
      headers: { ...headers, 'x-amz-target': 'DynamoDB_20120810.DescribeTimeToLive' },
      body: JSON.stringify({ TableName: table }),
    });
    expect(describe.status).toBe(200);
    expect(describe.json()).toEqual({ TimeToLiveDescription: { TimeToLiveStatus: 'DISABLED' } });
    const update = await http(cp.base, 'POST', '/', {
      headers: { ...headers, 'x-amz-target': 'DynamoDB_20120810.UpdateTimeToLive' },
      body: JSON.stringify({
        TableName: table,
        TimeToLiveSpecification: { Enabled: true, AttributeName: 'exp' },
      }),
    });
    expect(update.status).toBe(403);
    expect((update.json() as { __type: string }).__type).toBe(
      'com.amazon.coral.service#MissingAuthenticationTokenException',
    );
  };

  it('requires a signature for DescribeTimeToLive when reads are closed', async () => {
    const closed = await startControlPlane({ api: { openReads: false } });
    try {
      const res = await http(closed.base, 'POST', '/', {
        headers: {
          'content-type': 'application/x-amz-json-1.0',
          'x-amz-target': 'DynamoDB_20120810.DescribeTimeToLive',
        },
        body: JSON.stringify({ TableName: 'whatever' }),
      });
      expect(res.status).toBe(403);
      const client = new DynamoDBClient({
        endpoint: closed.base,
        region: closed.config.region,
        credentials: AWS_KEY,
        maxAttempts: 1,
      });
      clients.push(client);
      const table = await newTable(cp.ddb, 'aws', tables);
      const out = await client.send(new DescribeTimeToLiveCommand({ TableName: table }));
      expect(out.TimeToLiveDescription?.TimeToLiveStatus).toBe('DISABLED');
    } finally {
      await deleteTestTable(closed.ddb, closed.config.tables.control);
      await closed.close();
    }
  });

  it('never logs the secret access key or signatures', () => {
    const log = cp.logs.text();
    expect(log).toContain('"route":"aws:UpdateTimeToLive"');
    expect(log).not.toContain(AWS_KEY.secretAccessKey);
    expect(log).not.toMatch(/Signature=/);
  });
});
