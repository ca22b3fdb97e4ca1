import { runCli } from '../../../cli/program';
import type { PolicyDocument, PolicyStatement } from '../../../cli/iam-policy';
import { fakeIo } from '../../support/cli';

async function policy(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; doc: PolicyDocument; stderr: string }> {
  const io = fakeIo({ env: { TTLSTREAM_QUIET: '1', ...env } });
  const code = await runCli(['iam-policy', ...args], io);
  return {
    code,
    doc: (code === 0 ? JSON.parse(io.stdout.text) : { Statement: [] }) as PolicyDocument,
    stderr: io.stderr.text,
  };
}

const statement = (doc: PolicyDocument, sid: string): PolicyStatement | undefined =>
  doc.Statement.find((s) => s.Sid === sid);

const ACCOUNT = ['--account', '123456789012'];

describe('ttlstream iam-policy', () => {
  it('scanner: reads of the named TTL tables and their indexes, its own tables, nothing else', async () => {
    const { code, doc, stderr } = await policy([
      '--roles',
      'scanner',
      '--tables',
      'orders,carts',
      ...ACCOUNT,
    ]);
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(doc.Version).toBe('2012-10-17');
    expect(doc.Statement.map((s) => s.Sid)).toEqual(['TtlTables', 'TtlstreamTables']);
    expect(statement(doc, 'TtlTables')).toEqual({
      Sid: 'TtlTables',
      Effect: 'Allow',
      Action: ['dynamodb:BatchGetItem', 'dynamodb:DescribeTable', 'dynamodb:Query', 'dynamodb:Scan'],
      Resource: [
        'arn:aws:dynamodb:us-east-1:123456789012:table/orders',
        'arn:aws:dynamodb:us-east-1:123456789012:table/orders/index/*',
        'arn:aws:dynamodb:us-east-1:123456789012:table/carts',
        'arn:aws:dynamodb:us-east-1:123456789012:table/carts/index/*',
      ],
    });
    expect(statement(doc, 'TtlstreamTables')?.Resource).toEqual([
      'arn:aws:dynamodb:us-east-1:123456789012:table/ttlstream_control',
      'arn:aws:dynamodb:us-east-1:123456789012:table/ttlstream_marks',
    ]);
    // The scanner never deletes a TTL item: the producer does, under its condition.
    expect(JSON.stringify(statement(doc, 'TtlTables'))).not.toContain('DeleteItem');
  });

  it('producer: the conditional delete and re-reads, and with MSK IAM publishing and creating its topics', async () => {
    const { doc } = await policy(
      ['--roles', 'producer', '--tables', 'orders', ...ACCOUNT, '--kafka-cluster', 'prod/abc-1'],
      {
        TTLSTREAM_KAFKA_SSL: 'true',
        TTLSTREAM_KAFKA_SASL_MECHANISM: 'aws-msk-iam',
        TTLSTREAM_REGION: 'eu-west-1',
      },
    );
    expect(statement(doc, 'TtlTables')?.Action).toEqual([
      'dynamodb:BatchGetItem',
      'dynamodb:DeleteItem',
      'dynamodb:DescribeTable',
      'dynamodb:GetItem',
    ]);
    expect(statement(doc, 'KafkaCluster')).toMatchObject({
      Action: ['kafka-cluster:Connect', 'kafka-cluster:WriteDataIdempotently'],
      Resource: 'arn:aws:kafka:eu-west-1:123456789012:cluster/prod/abc-1',
    });
    expect(statement(doc, 'KafkaStreamTopics')).toMatchObject({
      Action: expect.arrayContaining(['kafka-cluster:CreateTopic', 'kafka-cluster:WriteData']) as unknown,
      Resource: ['arn:aws:kafka:eu-west-1:123456789012:topic/prod/abc-1/ttlstream.remove'],
    });
    expect(statement(doc, 'KafkaArchiverGroup')).toBeUndefined();
    expect(statement(doc, 'ArchiveObjects')).toBeUndefined();
  });

  it('archiver: the archive prefix, its SSE-KMS key through S3 only, the topics and its group', async () => {
    const { doc } = await policy(
      ['--roles', 'archiver', ...ACCOUNT, '--msk-iam', '--kafka-cluster', 'prod/abc-1'],
      {
        TTLSTREAM_ARCHIVE_URL: 's3://archive-bucket/ttl/',
        TTLSTREAM_ARCHIVE_S3_SSE: 'aws:kms',
        TTLSTREAM_ARCHIVE_S3_KMS_KEY_ID: 'arn:aws:kms:us-east-1:123456789012:key/1234abcd',
      },
    );
    expect(statement(doc, 'ListArchive')).toEqual({
      Sid: 'ListArchive',
      Effect: 'Allow',
      Action: ['s3:ListBucket'],
      Resource: 'arn:aws:s3:::archive-bucket',
      Condition: { StringLike: { 's3:prefix': ['ttl/*'] } },
    });
    expect(statement(doc, 'ArchiveObjects')).toMatchObject({
      Action: ['s3:AbortMultipartUpload', 's3:DeleteObject', 's3:GetObject', 's3:PutObject'],
      Resource: 'arn:aws:s3:::archive-bucket/ttl/*',
    });
    expect(statement(doc, 'ArchiveKey')).toEqual({
      Sid: 'ArchiveKey',
      Effect: 'Allow',
      Action: ['kms:Decrypt', 'kms:GenerateDataKey'],
      Resource: 'arn:aws:kms:us-east-1:123456789012:key/1234abcd',
      Condition: { StringEquals: { 'kms:ViaService': 's3.us-east-1.amazonaws.com' } },
    });
    expect(statement(doc, 'KafkaStreamTopics')?.Action).toEqual([
      'kafka-cluster:DescribeTopic',
      'kafka-cluster:ReadData',
    ]);
    expect(statement(doc, 'KafkaDeadLetterTopic')?.Resource).toBe(
      'arn:aws:kafka:us-east-1:123456789012:topic/prod/abc-1/ttlstream.dead-letter',
    );
    expect(statement(doc, 'KafkaArchiverGroup')).toEqual({
      Sid: 'KafkaArchiverGroup',
      Effect: 'Allow',
      Action: ['kafka-cluster:AlterGroup', 'kafka-cluster:DescribeGroup'],
      Resource: 'arn:aws:kafka:us-east-1:123456789012:group/prod/abc-1/ttlstream-archiver',
    });
    // The archiver reads the control table only: no TTL table is written by it.
    expect(statement(doc, 'TtlTables')?.Action).toEqual(['dynamodb:DescribeTable']);
  });

  it('api: lists every table, reads only the marker row of tables not its own, needs no Kafka or S3', async () => {
    const { doc } = await policy(['--roles', 'api', '--tables', 'orders', ...ACCOUNT, '--msk-iam']);
    expect(statement(doc, 'ListTables')).toMatchObject({ Action: ['dynamodb:ListTables'], Resource: '*' });
    expect(statement(doc, 'DescribeAnyTable')?.Resource).toBe(
      'arn:aws:dynamodb:us-east-1:123456789012:table/*',
    );
    expect(statement(doc, 'ReadMarkerRowOfAnyTable')).toMatchObject({
      Action: ['dynamodb:GetItem'],
      Condition: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': ['ttlstream#table'] } },
    });
    expect(doc.Statement.filter((s) => /^(Kafka|Archive|ListArchive)/.test(s.Sid))).toEqual([]);
  });

  it('all roles: one policy for one process, every action well-formed, every Sid once; alias keys by condition', async () => {
    const { code, doc } = await policy(
      ['--tables', 'orders', ...ACCOUNT, '--kms-key', 'alias/archive', '--msk-iam'],
      {
        TTLSTREAM_ARCHIVE_URL: 's3://archive-bucket',
        TTLSTREAM_TOPICS_NAMING: 'per-table',
      },
    );
    expect(code).toBe(0);
    const sids = doc.Statement.map((s) => s.Sid);
    expect(new Set(sids).size).toBe(sids.length);
    for (const s of doc.Statement) {
      expect(s.Sid).toMatch(/^[A-Za-z0-9]+$/);
      for (const a of s.Action) expect(a).toMatch(/^(dynamodb|s3|kms|kafka-cluster):[A-Za-z]+$/);
    }
    expect(statement(doc, 'ListArchive')).not.toHaveProperty('Condition');
    expect(statement(doc, 'ArchiveObjects')?.Resource).toBe('arn:aws:s3:::archive-bucket/*');
    expect(statement(doc, 'ArchiveKey')?.Condition).toEqual({
      StringEquals: { 'kms:ViaService': 's3.us-east-1.amazonaws.com' },
      'ForAnyValue:StringEquals': { 'kms:ResourceAliases': 'alias/archive' },
    });
    expect(statement(doc, 'KafkaStreamTopics')?.Resource).toEqual([
      'arn:aws:kafka:us-east-1:123456789012:topic/*/*/ttlstream.remove.orders',
    ]);
  });

  it('says on stderr which ARNs are wildcards, and refuses a malformed bucket or cluster (exit 2)', async () => {
    const open = await policy(['--roles', 'producer']);
    expect(open.code).toBe(0);
    expect(open.stderr).toMatch(/warning: no --account/);
    expect(open.stderr).toMatch(/warning: no --tables/);
    expect(statement(open.doc, 'TtlTables')?.Resource).toEqual([
      'arn:aws:dynamodb:us-east-1:*:table/*',
      'arn:aws:dynamodb:us-east-1:*:table/*/index/*',
    ]);
    expect((await policy(['--roles', 'archiver', '--bucket', 'Not A Bucket'])).code).toBe(2);
    expect((await policy(['--roles', 'archiver', '--msk-iam', '--kafka-cluster', 'prod'])).code).toBe(2);
    expect((await policy(['--roles', 'nobody'])).code).toBe(2);
  });
});
