import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { runCli } from '../../../../cli/program';
import type { PolicyDocument, PolicyStatement } from '../../../../cli/iam-policy/policy';
import { fakeIo } from '../../../support/cli';

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
    const { code, doc, stderr } = await policy(
      ['--roles', 'scanner', '--tables', 'orders,carts', ...ACCOUNT],
      { TTLSTREAM_REGION: 'us-east-1' },
    );
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
    // Every part of the layout is under the grants: the key indexes under _index/ (docs/decisions/0033) too.
    const objects = String(statement(doc, 'ArchiveObjects')?.Resource);
    const listing = String(
      (statement(doc, 'ListArchive')?.Condition as { StringLike: { 's3:prefix': string[] } }).StringLike[
        's3:prefix'
      ][0],
    );
    const like = (pattern: string, value: string): boolean =>
      new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`).test(value);
    for (const key of [
      'table=orders/date=2026-12-04/hour=03/t+0+00000000000000000000-00000000000000000009.parquet',
      '_index/table=orders/date=2026-12-04/hour=03/t+0+00000000000000000000-00000000000000000009.parquet.idx.json',
      '_manifest/t/0/00000000000000000000-00000000000000000009.json',
    ]) {
      expect(like(objects, `arn:aws:s3:::archive-bucket/ttl/${key}`)).toBe(true);
      expect(like(listing, `ttl/${key.slice(0, key.lastIndexOf('/') + 1)}`)).toBe(true);
    }
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
    expect(open.stderr).toMatch(
      /^ttlstream: warning: region is not set: the ARNs are for us-east-1, the default; give the deployment's settings \(--env-file, --config\) or --region$/m,
    );
    expect(open.stderr).toMatch(/warning: no --account/);
    expect(open.stderr).toMatch(/warning: no --tables/);
    expect(statement(open.doc, 'TtlTables')?.Resource).toEqual([
      'arn:aws:dynamodb:us-east-1:*:table/*',
      'arn:aws:dynamodb:us-east-1:*:table/*/index/*',
    ]);
    expect((await policy(['--roles', 'archiver', '--bucket', 'Not A Bucket'])).code).toBe(2);
    const cluster = await policy(
      ['--roles', 'archiver', '--bucket', 's3://bkt/p', '--msk-iam', '--kafka-cluster', 'prod'],
      { TTLSTREAM_ARCHIVE_S3_SSE: 'AES256' },
    );
    expect({ code: cluster.code, stderr: cluster.stderr }).toEqual({
      code: 2,
      stderr: 'ttlstream: --kafka-cluster: expected <cluster name>/<cluster uuid>, got "prod"\n',
    });
    expect((await policy(['--roles', 'nobody'])).code).toBe(2);
  });
});

describe('ttlstream iam-policy: the settings the pods read', () => {
  let dir: string;
  beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'ttlstream-iam-'))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  /** deploy/k8s/base/configmap.yaml's data as the NAME=VALUE lines `kubectl ... | jq` gives (docs/deployment.md §4). */
  const configMapEnvFile = (): string => {
    const map = parse(
      readFileSync(resolve(__dirname, '../../../../deploy/k8s/base/configmap.yaml'), 'utf8'),
    ) as {
      data: Record<string, string>;
    };
    return file(
      'configmap.env',
      Object.entries(map.data)
        .map(([k, v]) => `${k}=${v}`)
        .join('\n') + '\n',
    );
  };

  it("the loop of docs/deployment.md: each role's policy from deploy/k8s's ConfigMap, ARNs in its region", async () => {
    const envFile = configMapEnvFile();
    for (const role of ['api', 'scanner', 'producer', 'archiver']) {
      const { code, doc, stderr } = await policy([
        '--env-file',
        envFile,
        '--roles',
        role,
        '--tables',
        'orders',
        ...ACCOUNT,
        '--kafka-cluster',
        'prod/abc-1',
      ]);
      expect({ role, code, stderr }).toEqual({ role, code: 0, stderr: '' });
      for (const st of doc.Statement)
        for (const r of [st.Resource].flat())
          if (r !== '*') expect(r).toMatch(/^arn:aws:(s3|[a-z-]+:eu-west-1):/);
      // The ConfigMap's aws-msk-iam mechanism turns the kafka-cluster statements on without --msk-iam.
      expect(statement(doc, 'KafkaCluster') !== undefined).toBe(role !== 'api');
    }
    const archiver = await policy(['--env-file', envFile, '--roles', 'archiver', ...ACCOUNT]);
    expect(statement(archiver.doc, 'ArchiveObjects')?.Resource).toBe(
      'arn:aws:s3:::example-ttlstream-archive/ttl/*',
    );
    expect(statement(archiver.doc, 'ArchiveKey')).toMatchObject({
      Resource: 'arn:aws:kms:eu-west-1:123456789012:key/00000000-0000-0000-0000-000000000000',
      Condition: { StringEquals: { 'kms:ViaService': 's3.eu-west-1.amazonaws.com' } },
    });
  });

  it('reads the env file as kubectl writes one: comments, blanks, other variables left out; it wins over the environment', async () => {
    const envFile = file(
      'mixed.env',
      [
        '# the ConfigMap',
        '',
        '  TTLSTREAM_REGION=eu-central-1',
        'TTLSTREAM_TABLES_CONTROL=prod_control',
        'NODE_OPTIONS=--max-old-space-size=400',
        'TTLSTREAM_API_TOKENS=a=b=c-and-more-than-16-characters\r',
      ].join('\n'),
    );
    const { code, doc, stderr } = await policy(
      ['--env-file', envFile, '--roles', 'api', '--tables', 'orders', ...ACCOUNT],
      {
        TTLSTREAM_REGION: 'us-west-2',
      },
    );
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(statement(doc, 'TtlstreamTables')?.Resource).toEqual([
      'arn:aws:dynamodb:eu-central-1:123456789012:table/prod_control',
      'arn:aws:dynamodb:eu-central-1:123456789012:table/ttlstream_marks',
    ]);
    // `ttlstream config` reads it the same way, for a look at what the pods get.
    const io = fakeIo({ env: { TTLSTREAM_QUIET: '1' } });
    expect(await runCli(['config', '--json', '--env-file', envFile], io)).toBe(0);
    expect(JSON.parse(io.stdout.text)).toMatchObject({
      region: 'eu-central-1',
      tables: { control: 'prod_control' },
    });
  });

  it.each([
    [
      'a line without =',
      'TTLSTREAM_REGION eu-west-1\n',
      /^ttlstream: --env-file \S+ line 1: expected NAME=VALUE$/,
    ],
    [
      'a quoted value',
      '# x\nTTLSTREAM_REGION="eu-west-1"\n',
      /^ttlstream: --env-file \S+ line 2: the value of TTLSTREAM_REGION is in quotes, which `kubectl create configmap --from-env-file` would keep as part of it: remove them$/,
    ],
    [
      'a misspelt setting',
      'TTLSTREAM_ARCHIVE_URLL=s3://b/p\n',
      /^ttlstream: TTLSTREAM_ARCHIVE_URLL: not a ttlstream setting/,
    ],
    [
      'a bad value',
      'TTLSTREAM_TOPICS_PARTITIONS=six\n',
      /^ttlstream: TTLSTREAM_TOPICS_PARTITIONS: expected a number, got "six"$/,
    ],
  ])('refuses %s in the env file: one line, exit 2', async (_what, text, line) => {
    const r = await policy(['--env-file', file('bad.env', text), '--roles', 'api']);
    expect(r.code).toBe(2);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr.trimEnd()).toMatch(line);
  });

  it('refuses a missing env file, naming it', async () => {
    const r = await policy(['--env-file', join(dir, 'nope.env'), '--roles', 'api']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^ttlstream: --env-file \S+nope\.env: ENOENT/);
  });

  it('refuses an archiver policy without S3 statements: archive.url not s3:// (exit 2, the setting named)', async () => {
    for (const env of [{}, { TTLSTREAM_ARCHIVE_URL: 'file:///var/archive' }]) {
      const r = await policy(['--roles', 'scanner,archiver', ...ACCOUNT], env);
      const url = env.TTLSTREAM_ARCHIVE_URL ?? 'file:///tmp/ttlstream-archive';
      expect({ code: r.code, stderr: r.stderr }).toEqual({
        code: 2,
        stderr: `ttlstream: archive.url (TTLSTREAM_ARCHIVE_URL) is ${url}, not s3://: the archiver's policy would have no S3 statements; read the deployment's settings (--env-file, --config or TTLSTREAM_ARCHIVE_URL) or give --bucket\n`,
      });
    }
    // Roles that never touch the archive do not need it.
    expect((await policy(['--roles', 'api,scanner,producer', ...ACCOUNT])).code).toBe(0);
    // --bucket names the archive for a configuration that does not.
    const given = await policy(['--roles', 'archiver', '--bucket', 's3://given/p', ...ACCOUNT], {
      TTLSTREAM_ARCHIVE_S3_SSE: 'AES256',
    });
    expect(statement(given.doc, 'ArchiveObjects')?.Resource).toBe('arn:aws:s3:::given/p/*');
    // A bucket archive.url names but S3 would refuse: named as the setting, not as --bucket.
    const upper = await policy(['--roles', 'archiver', ...ACCOUNT], {
      TTLSTREAM_ARCHIVE_URL: 's3://Upper/p',
    });
    expect(upper.stderr).toMatch(
      /^ttlstream: archive\.url \(TTLSTREAM_ARCHIVE_URL\): expected s3:\/\/bucket\/prefix/,
    );
  });

  it("refuses an archiver policy without the KMS statement its bucket's default key would need", async () => {
    const archive = { TTLSTREAM_ARCHIVE_URL: 's3://archive/ttl' };
    const unset = await policy(['--roles', 'archiver', ...ACCOUNT], archive);
    expect({ code: unset.code, stderr: unset.stderr }).toEqual({
      code: 2,
      stderr:
        "ttlstream: archive.s3Sse (TTLSTREAM_ARCHIVE_S3_SSE) is unset: the bucket's default encryption decides, and with a KMS key of yours the archiver needs kms:GenerateDataKey and kms:Decrypt on it; set archive.s3Sse to aws:kms with archive.s3KmsKeyId (TTLSTREAM_ARCHIVE_S3_KMS_KEY_ID), or to AES256, or give --kms-key\n",
    });
    // The bucket default's key named on the command line.
    const named = await policy(
      ['--roles', 'archiver', ...ACCOUNT, '--kms-key', 'arn:aws:kms:us-east-1:1:key/k'],
      archive,
    );
    expect(statement(named.doc, 'ArchiveKey')?.Resource).toBe('arn:aws:kms:us-east-1:1:key/k');
    // S3-managed keys: no KMS statement, nothing to say.
    const sse = await policy(['--roles', 'archiver', ...ACCOUNT], {
      ...archive,
      TTLSTREAM_ARCHIVE_S3_SSE: 'AES256',
    });
    expect(sse.code).toBe(0);
    expect(statement(sse.doc, 'ArchiveKey')).toBeUndefined();
    // aws:kms without a key is the AWS managed key aws/s3: its key policy admits the account through S3, no statement.
    const managed = await policy(['--roles', 'archiver', ...ACCOUNT], {
      ...archive,
      TTLSTREAM_ARCHIVE_S3_SSE: 'aws:kms',
    });
    expect(managed.code).toBe(0);
    expect(statement(managed.doc, 'ArchiveKey')).toBeUndefined();
    expect(managed.stderr).toMatch(
      /warning: archive\.s3Sse is aws:kms without archive\.s3KmsKeyId: S3 encrypts with the AWS managed key aws\/s3/,
    );
  });

  it('names the MSK cluster in kafka.sasl.region, the tables in region', async () => {
    const { doc } = await policy(
      ['--roles', 'producer', '--tables', 'orders', ...ACCOUNT, '--kafka-cluster', 'prod/abc-1'],
      {
        TTLSTREAM_REGION: 'eu-west-1',
        TTLSTREAM_KAFKA_SSL: 'true',
        TTLSTREAM_KAFKA_SASL_MECHANISM: 'aws-msk-iam',
        TTLSTREAM_KAFKA_SASL_REGION: 'eu-central-1',
      },
    );
    expect(statement(doc, 'KafkaCluster')?.Resource).toBe(
      'arn:aws:kafka:eu-central-1:123456789012:cluster/prod/abc-1',
    );
    expect(statement(doc, 'TtlTables')?.Resource).toContain(
      'arn:aws:dynamodb:eu-west-1:123456789012:table/orders',
    );
  });
});
