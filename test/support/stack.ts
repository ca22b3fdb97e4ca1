import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import {
  CreateTableCommand,
  DeleteTableCommand,
  ResourceNotFoundException,
  ScanCommand,
  type AttributeDefinition,
  type AttributeValue,
  type DynamoDBClient,
  type KeySchemaElement,
  type ScalarAttributeType,
  type ScanCommandInput,
  type StreamViewType,
} from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Admin } from 'kafkajs';
import { createS3Client } from '../../core/clients';
import { loadConfig, type ConfigInput, type TtlstreamConfig } from '../../core/config';
import { waitForActive } from '../../core/tables';
import { createTopic } from '../../core/topics';
import { ROOT_DIR, type StackService } from './ports';

export { STACK_SERVICES, portOpen, stackPort, type StackService } from './ports';

/**
 * Configuration pointing at the local stack (from .ttlstream/endpoints.json, written by infra/up.sh and named by
 * TTLSTREAM_LOCAL_STACK, which integration-env.ts sets),
 * with the caller's overrides on top. Ambient TTLSTREAM_* variables are honoured as in production.
 */
export function testConfig(overrides: ConfigInput = {}): TtlstreamConfig {
  return loadConfig({ overrides: { log: { level: 'silent' }, ...overrides } });
}

/**
 * A name no other test (or concurrent test run) uses: lower-case letters, digits and '-', so it
 * is valid as a DynamoDB table, a Kafka topic, an S3 bucket and a consumer group alike.
 */
export function uniqueName(prefix: string): string {
  if (!/^[a-z0-9][a-z0-9-]*$/.test(prefix))
    throw new Error(`uniqueName prefix "${prefix}" must be lower-case letters, digits and '-'`);
  const name = `${prefix}-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
  if (name.length > 63)
    throw new Error(`uniqueName: "${name}" is longer than an S3 bucket name may be; use a shorter prefix`);
  return name;
}

export interface TestKeySchema {
  hashKey: string;
  hashType?: ScalarAttributeType;
  rangeKey?: string;
  rangeType?: ScalarAttributeType;
}

/** Create an on-demand table (with a stream of `stream`'s view, when given) and wait until it is ACTIVE. */
export async function createTestTable(
  ddb: DynamoDBClient,
  name: string,
  keySchema: TestKeySchema = { hashKey: 'pk' },
  stream?: StreamViewType,
): Promise<string> {
  const keys: KeySchemaElement[] = [{ AttributeName: keySchema.hashKey, KeyType: 'HASH' }];
  const attributes: AttributeDefinition[] = [
    { AttributeName: keySchema.hashKey, AttributeType: keySchema.hashType ?? 'S' },
  ];
  if (keySchema.rangeKey) {
    keys.push({ AttributeName: keySchema.rangeKey, KeyType: 'RANGE' });
    attributes.push({ AttributeName: keySchema.rangeKey, AttributeType: keySchema.rangeType ?? 'S' });
  }
  await ddb.send(
    new CreateTableCommand({
      TableName: name,
      KeySchema: keys,
      AttributeDefinitions: attributes,
      BillingMode: 'PAY_PER_REQUEST',
      ...(stream ? { StreamSpecification: { StreamEnabled: true, StreamViewType: stream } } : {}),
    }),
  );
  await waitForActive(ddb, name);
  return name;
}

/**
 * A uniquely named on-demand table (`prefix` and a random tail), ACTIVE, added to `made`: the suite's list of
 * tables to delete in its afterAll.
 */
export async function newTable(ddb: DynamoDBClient, prefix: string, made: string[]): Promise<string> {
  const name = await createTestTable(ddb, uniqueName(prefix));
  made.push(name);
  return name;
}

/**
 * Every item of `table`, read with consistent Scans page after page; `input` is added to each request (a filter,
 * a projection).
 */
export async function scanTable(
  ddb: DynamoDBClient,
  table: string,
  input: Omit<ScanCommandInput, 'TableName' | 'ExclusiveStartKey'> = {},
): Promise<Array<Record<string, AttributeValue>>> {
  const items: Array<Record<string, AttributeValue>> = [];
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page = await ddb.send(
      new ScanCommand({
        TableName: table,
        ConsistentRead: true,
        ...input,
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

/** Best-effort cleanup; a table that is already gone is fine. */
export async function deleteTestTable(ddb: DynamoDBClient, name: string): Promise<void> {
  try {
    await ddb.send(new DeleteTableCommand({ TableName: name }));
  } catch (err) {
    if (!(err instanceof ResourceNotFoundException)) throw err;
  }
}

export async function createTestTopic(
  admin: Admin,
  name: string,
  numPartitions = 3,
  configEntries: Array<{ name: string; value: string }> = [],
): Promise<string> {
  const created = await createTopic(admin, {
    topic: name,
    numPartitions,
    replicationFactor: 1,
    configEntries,
  });
  if (!created) throw new Error(`topic ${name} already exists: test names must be unique (use uniqueName)`);
  return name;
}

export async function createTestBucket(s3: S3Client, name: string): Promise<string> {
  await s3.send(new CreateBucketCommand({ Bucket: name }));
  return name;
}

/**
 * The URL of a new, empty archive for test `name`: a bucket of the stack's S3, or a temporary folder that is added
 * to `dirs` for the caller to remove.
 */
export async function createTestArchive(backend: 'fs' | 's3', name: string, dirs: string[]): Promise<string> {
  if (backend === 's3') return `s3://${await createTestBucket(createS3Client(testConfig()), name)}/a`;
  const dir = mkdtempSync(join(tmpdir(), 'ttlstream-archive-'));
  dirs.push(dir);
  return `file://${dir}`;
}

const execFileAsync = promisify(execFile);

/**
 * Fault injection: stop, start, restart (graceful, data kept) or kill (SIGKILL) one service of the
 * local stack through infra/ctl.sh. `start` and `restart` resolve once the service answers again.
 */
export async function stackCtl(
  action: 'stop' | 'start' | 'restart' | 'kill',
  service: StackService,
): Promise<void> {
  try {
    await execFileAsync('bash', [resolve(ROOT_DIR, 'infra', 'ctl.sh'), action, service], {
      cwd: ROOT_DIR,
      timeout: 180_000,
    });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`infra/ctl.sh ${action} ${service} failed: ${e.stderr ?? e.message}`);
  }
}
