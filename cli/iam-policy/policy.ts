import type { TtlstreamConfig } from '../../core/config';
import { ConfigError, ValidationError } from '../../core/errors';
import { MARKER_VALUE } from '../../core/tables';
import { ROLE_NAMES, type RoleName } from '../kit/run-roles';

/**
 * The least-privilege IAM policy of a `ttlstream run --roles …` process (`ttlstream iam-policy`).
 *
 * The DynamoDB and S3 grants below are what each role sends, by SDK operation and by the kind of resource it sends
 * it to; test/integration/deploy/iam-policy.test.ts runs each role as its own process and fails when a role sends an
 * operation it is not granted here, or is granted one it never sent (the few it cannot send in a short run are listed
 * there with the reason). The Kafka (MSK IAM) grants follow the Kafka APIs the code calls (kafkajs producer,
 * consumer group and admin calls) and are not checked against a real cluster.
 */

/**
 * What a DynamoDB operation is sent to: the tables with TTL, their streams (`table/<t>/stream/*`), ttlstream's own
 * tables, any table, or no table.
 */
export type TableClass = 'user' | 'userStream' | 'internal' | 'anyTable' | 'account';
/** What an S3 operation is sent to: the archive bucket itself (listing), or the objects under its prefix. */
export type ArchiveClass = 'bucket' | 'objects';

type DynamoGrants = Readonly<Partial<Record<TableClass, readonly string[]>>>;
type S3Grants = Readonly<Partial<Record<ArchiveClass, readonly string[]>>>;

/**
 * DynamoDB operations by role (SDK command names without `Command`; each is also its IAM action's name).
 * internal: the control and marks tables; every role makes them at its start (core/tables.ts ensureInternalTable:
 * CreateTable, answered ResourceInUseException when they exist, then DescribeTable and the marker PutItem).
 */
export const DYNAMODB_GRANTS: Readonly<Record<RoleName, DynamoGrants>> = {
  api: {
    // GET /tables lists the account's tables and describes each; a table keyed like ttlstream's own is checked for
    // the marker row (GetItem of that one key only: the condition in the policy).
    account: ['ListTables'],
    anyTable: ['DescribeTable', 'GetItem'],
    // GET /tables/:table/expiring scans the table (preview).
    user: ['DescribeTable', 'Scan'],
    // Settings rows; the guard's verdicts; a guard cancel reads the table's pending marks and discards them.
    internal: [
      'BatchGetItem',
      'BatchWriteItem',
      'CreateTable',
      'DescribeTable',
      'GetItem',
      'PutItem',
      'Query',
      'UpdateItem',
    ],
  },
  scanner: {
    // Scan (scan mode, the index mode's sweep), Query of the expiry index, BatchGetItem: the backlog probe reads a
    // sample of the items it marked to see whether they are gone yet.
    user: ['BatchGetItem', 'DescribeTable', 'Query', 'Scan'],
    // Settings, leases (Scan of the members, conditional Put/Update, DeleteItem when handed back at the stop), the
    // marks (BatchWriteItem), doorbells, the guard, the sweep's progress.
    internal: [
      'BatchWriteItem',
      'CreateTable',
      'DeleteItem',
      'DescribeTable',
      'GetItem',
      'PutItem',
      'Scan',
      'UpdateItem',
    ],
  },
  producer: {
    // The consistent re-read (BatchGetItem), the conditional DeleteItem, and a GetItem after a delete was refused.
    user: ['BatchGetItem', 'DeleteItem', 'DescribeTable', 'GetItem'],
    internal: [
      'BatchGetItem',
      'BatchWriteItem',
      'CreateTable',
      'DeleteItem',
      'DescribeTable',
      'GetItem',
      'PutItem',
      'Query',
      'Scan',
      'UpdateItem',
    ],
  },
  archiver: {
    // The retention schedule reads a table's archiveRetentionDays from the control table (the settings of the
    // table's present incarnation: DescribeTable).
    user: ['DescribeTable'],
    internal: ['GetItem'],
  },
  streams: {
    // A followed table's stream settings and LatestStreamArn; its streams (ListStreams names no table ARN).
    user: ['DescribeTable'],
    userStream: ['DescribeStream', 'GetRecords', 'GetShardIterator'],
    account: ['ListStreams'],
    // The followed tables' settings rows, shard leases and members, checkpoints and follow rows.
    internal: ['CreateTable', 'DeleteItem', 'DescribeTable', 'PutItem', 'Scan', 'UpdateItem'],
  },
};

/**
 * S3 operations by role (SDK command names without `Command`). The archiver writes the archive; the streams role only
 * its loss ledger (`_stream-loss/`), which it also reads with the acknowledgements.
 */
export const S3_GRANTS: Readonly<Record<RoleName, S3Grants>> = {
  api: {},
  scanner: {},
  producer: {},
  streams: { bucket: ['ListObjectsV2'], objects: ['GetObject', 'PutObject'] },
  archiver: {
    bucket: ['ListObjectsV2'],
    objects: [
      'PutObject',
      // files above 16 MiB (archive/storage/s3.ts MULTIPART_THRESHOLD)
      'CreateMultipartUpload',
      'UploadPart',
      'CompleteMultipartUpload',
      'AbortMultipartUpload',
      'GetObject',
      // the retention schedule (archive.retentionDays, or a table's archiveRetentionDays); compaction's removals
      'DeleteObject',
      // compaction moves a staged file into its hour folder (s3:GetObject on the source, s3:PutObject on the target);
      // its table lock is a PutObject with If-None-Match, which needs nothing more (docs/decisions/0037)
      'CopyObject',
    ],
  },
};

/** The IAM action an S3 operation needs. */
export const S3_ACTION_OF: Readonly<Record<string, string>> = {
  PutObject: 's3:PutObject',
  CreateMultipartUpload: 's3:PutObject',
  UploadPart: 's3:PutObject',
  CompleteMultipartUpload: 's3:PutObject',
  AbortMultipartUpload: 's3:AbortMultipartUpload',
  GetObject: 's3:GetObject',
  DeleteObject: 's3:DeleteObject',
  CopyObject: 's3:PutObject',
  ListObjectsV2: 's3:ListBucket',
};

/** MSK IAM actions by role and resource (kafka-cluster:*), from the Kafka APIs each role's clients call. */
interface KafkaGrants {
  cluster?: readonly string[];
  streamTopics?: readonly string[];
  deadLetterTopic?: readonly string[];
  group?: readonly string[];
}

/** A topic a role creates and whose settings it converges (core/topics.ts applyTopics). */
const MANAGED_TOPIC = [
  'AlterTopicDynamicConfiguration',
  'CreateTopic',
  'DescribeTopic',
  'DescribeTopicDynamicConfiguration',
] as const;

/** What publishes the stream: an idempotent producer onto topics it manages. */
const PUBLISHER: KafkaGrants = {
  cluster: ['Connect', 'WriteDataIdempotently'],
  streamTopics: [...MANAGED_TOPIC, 'WriteData'],
  deadLetterTopic: MANAGED_TOPIC,
};

/**
 * Every role but the API connects (`run` logs in to each broker before its roles start). The producer publishes
 * with an idempotent producer (InitProducerId: WriteDataIdempotently) and creates the stream and dead-letter topics,
 * converging their settings (core/topics.ts applyTopics: Metadata, CreateTopics, DescribeConfigs, AlterConfigs).
 * The archiver consumes the stream topics in its group (JoinGroup, SyncGroup, Heartbeat, OffsetCommit: AlterGroup;
 * FindCoordinator, OffsetFetch: DescribeGroup; Fetch: ReadData; ListOffsets and Metadata: DescribeTopic) and writes
 * poison records to the dead-letter topic, which it creates when missing.
 */
export const KAFKA_GRANTS: Readonly<Record<RoleName, KafkaGrants>> = {
  api: {},
  scanner: { cluster: ['Connect'] },
  producer: PUBLISHER,
  archiver: {
    cluster: ['Connect', 'WriteDataIdempotently'],
    streamTopics: ['DescribeTopic', 'ReadData'],
    deadLetterTopic: ['CreateTopic', 'DescribeTopic', 'WriteData'],
    group: ['AlterGroup', 'DescribeGroup'],
  },
  // Publishes as the producer does, and dead-letters a stream record that breaks the contract.
  streams: { ...PUBLISHER, deadLetterTopic: [...MANAGED_TOPIC, 'WriteData'] },
};

export interface IamPolicyOptions {
  roles: readonly RoleName[];
  /** The tables with TTL; undefined: every table of the account (a warning says so). */
  tables?: readonly string[];
  /**
   * The archive: `s3://bucket/prefix` or a bucket name; undefined: archive.url, which must then be s3:// for a policy
   * with the archiver role (ConfigError otherwise).
   */
  bucket?: string;
  /** The AWS account id; `*` when not given. */
  account?: string;
  /** The MSK cluster as `name/uuid` (the last two parts of its ARN); `*\/*` when not given. */
  kafkaCluster?: string;
  /** Include the kafka-cluster statements (MSK IAM); default: kafka.sasl.mechanism is aws-msk-iam. */
  mskIam?: boolean;
  /** The archive's KMS key (id, key ARN, alias name or alias ARN); default archive.s3KmsKeyId. */
  kmsKey?: string;
  /** The AWS partition of the ARNs (aws, aws-cn, aws-us-gov). */
  partition?: string;
}

export interface PolicyStatement {
  Sid: string;
  Effect: 'Allow';
  Action: string[];
  Resource: string | string[];
  Condition?: Record<string, Record<string, string | string[]>>;
}

export interface PolicyDocument {
  Version: '2012-10-17';
  Statement: PolicyStatement[];
}

export interface IamPolicyResult {
  policy: PolicyDocument;
  /** Things the reader must know (a wildcard used for a missing option); printed on stderr. */
  warnings: string[];
}

/** `s3://bucket/prefix`, `s3://bucket` or a bare bucket name. */
export function parseBucket(text: string, what = '--bucket'): { bucket: string; prefix: string } {
  const m = /^(?:s3:\/\/)?([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(text);
  if (!m) throw new ValidationError(`${what}: expected s3://bucket/prefix or a bucket name, got "${text}"`);
  return { bucket: m[1] as string, prefix: (m[2] ?? '').replace(/^\/+|\/+$/g, '') };
}

function sorted(values: Iterable<string>): string[] {
  return [...new Set(values)].sort();
}

/** Where the policy's ARNs point. */
interface ArnScope {
  partition: string;
  region: string;
  account: string;
}

/** The policy of a process running `options.roles` (the union of their grants), with what the reader must know. */
export function iamPolicy(config: TtlstreamConfig, options: IamPolicyOptions): IamPolicyResult {
  const roles = ROLE_NAMES.filter((r) => options.roles.includes(r));
  if (roles.length === 0) throw new ValidationError('iam-policy: name at least one role');
  const warnings: string[] = [];
  const scope: ArnScope = {
    partition: options.partition ?? 'aws',
    region: config.region,
    account: options.account ?? '*',
  };
  if (options.account === undefined)
    warnings.push('no --account: the ARNs name every account (*); give the account id to narrow them');
  const statements = [
    ...dynamodbStatements(config, roles, options, scope, warnings),
    ...s3Statements(config, roles, options, scope, warnings),
  ];
  // Kafka (MSK IAM)
  const mskIam = options.mskIam ?? config.kafka.sasl?.mechanism === 'aws-msk-iam';
  // The MSK cluster's region: kafka.sasl.region when the cluster is in another region than the tables.
  const kafkaRegion = config.kafka.sasl?.region ?? scope.region;
  if (mskIam) statements.push(...kafkaStatements(config, roles, options, { ...scope, region: kafkaRegion }));
  return { policy: { Version: '2012-10-17', Statement: statements }, warnings };
}

/** The roles' DynamoDB grants: on the TTL tables, ttlstream's own tables, any table, the account. */
function dynamodbStatements(
  config: TtlstreamConfig,
  roles: readonly RoleName[],
  options: IamPolicyOptions,
  { partition, region, account }: ArnScope,
  warnings: string[],
): PolicyStatement[] {
  const statements: PolicyStatement[] = [];
  const tableArn = (name: string): string => `arn:${partition}:dynamodb:${region}:${account}:table/${name}`;
  const userTables = options.tables ?? ['*'];
  if (
    options.tables === undefined &&
    roles.some(
      (r) => (DYNAMODB_GRANTS[r].user ?? []).length + (DYNAMODB_GRANTS[r].userStream ?? []).length > 0,
    )
  )
    warnings.push(
      'no --tables: the statements on the TTL tables name every table of the account (table/*); give the tables to narrow them',
    );
  const actions = (cls: TableClass): string[] =>
    sorted(roles.flatMap((r) => (DYNAMODB_GRANTS[r][cls] ?? []).map((op) => `dynamodb:${op}`)));
  const dynamo = (sid: string, cls: TableClass, resource: string | string[]) => {
    const a = actions(cls);
    if (a.length > 0) statements.push({ Sid: sid, Effect: 'Allow', Action: a, Resource: resource });
  };
  dynamo(
    'TtlTables',
    'user',
    userTables.flatMap((t) => [tableArn(t), `${tableArn(t)}/index/*`]),
  );
  dynamo(
    'TtlTableStreams',
    'userStream',
    userTables.map((t) => `${tableArn(t)}/stream/*`),
  );
  dynamo('TtlstreamTables', 'internal', sorted([config.tables.control, config.tables.marks]).map(tableArn));
  // Any table: its description, and (GetItem) only the marker row that tells ttlstream's own tables apart.
  const any = actions('anyTable');
  if (any.includes('dynamodb:DescribeTable'))
    statements.push({
      Sid: 'DescribeAnyTable',
      Effect: 'Allow',
      Action: ['dynamodb:DescribeTable'],
      Resource: tableArn('*'),
    });
  if (any.includes('dynamodb:GetItem'))
    statements.push({
      Sid: 'ReadMarkerRowOfAnyTable',
      Effect: 'Allow',
      Action: ['dynamodb:GetItem'],
      Resource: tableArn('*'),
      Condition: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [MARKER_VALUE] } },
    });
  dynamo('ListTables', 'account', '*');
  return statements;
}

/** The roles' grants on the archive's bucket and objects, and on its KMS key. */
function s3Statements(
  config: TtlstreamConfig,
  roles: readonly RoleName[],
  options: IamPolicyOptions,
  scope: ArnScope,
  warnings: string[],
): PolicyStatement[] {
  const s3Roles = roles.filter((r) => Object.keys(S3_GRANTS[r]).length > 0);
  if (s3Roles.length === 0) return [];
  const statements: PolicyStatement[] = [];
  const { partition } = scope;
  const { bucket, prefix } =
    options.bucket !== undefined
      ? parseBucket(options.bucket)
      : parseBucket(archiveOf(config), 'archive.url (TTLSTREAM_ARCHIVE_URL)');
  const objects = `arn:${partition}:s3:::${bucket}/${prefix === '' ? '' : `${prefix}/`}*`;
  const s3Actions = (cls: ArchiveClass): string[] =>
    sorted(s3Roles.flatMap((r) => (S3_GRANTS[r][cls] ?? []).map((op) => S3_ACTION_OF[op] ?? `s3:${op}`)));
  const list = s3Actions('bucket');
  if (list.length > 0)
    statements.push({
      Sid: 'ListArchive',
      Effect: 'Allow',
      Action: list,
      Resource: `arn:${partition}:s3:::${bucket}`,
      ...(prefix === '' ? {} : { Condition: { StringLike: { 's3:prefix': [`${prefix}/*`] } } }),
    });
  const objectActions = s3Actions('objects');
  if (objectActions.length > 0)
    statements.push({ Sid: 'ArchiveObjects', Effect: 'Allow', Action: objectActions, Resource: objects });
  const kms = kmsStatement(config, options, { ...scope, objectActions }, warnings);
  if (kms) statements.push(kms);
  return statements;
}

/**
 * The archive of an archiver's policy when --bucket does not name it. A policy without it would let the archiver
 * start and fail at its first roll (AccessDenied, every partition stuck): refused instead, naming the setting.
 */
function archiveOf(config: TtlstreamConfig): string {
  if (config.archive.url.startsWith('s3://')) return config.archive.url;
  throw new ConfigError(
    `archive.url (TTLSTREAM_ARCHIVE_URL) is ${config.archive.url}, not s3://: the archiver's policy would have no S3 statements; read the deployment's settings (--env-file, --config or TTLSTREAM_ARCHIVE_URL) or give --bucket`,
  );
}

/**
 * With SSE-KMS and a key of the customer's (archive.s3KmsKeyId or --kms-key), writing an object needs
 * kms:GenerateDataKey and reading it (and completing a multipart upload) kms:Decrypt, through S3 only. The AWS
 * managed key aws/s3 (aws:kms without a key) needs no grant of its own.
 */
function kmsStatement(
  config: TtlstreamConfig,
  options: IamPolicyOptions,
  at: { partition: string; region: string; account: string; objectActions: string[] },
  warnings: string[],
): PolicyStatement | undefined {
  const key = options.kmsKey ?? (config.archive.s3Sse === 'aws:kms' ? config.archive.s3KmsKeyId : undefined);
  if (key === undefined) return noKeyStatement(config, warnings);
  const actions = sorted([
    ...(at.objectActions.includes('s3:PutObject') ? ['kms:GenerateDataKey', 'kms:Decrypt'] : []),
    ...(at.objectActions.includes('s3:GetObject') ? ['kms:Decrypt'] : []),
  ]);
  if (actions.length === 0) return undefined;
  if (options.kmsKey !== undefined && config.archive.s3Sse === 'AES256')
    warnings.push(
      `--kms-key ${options.kmsKey} with archive.s3Sse AES256: the archive's objects use S3-managed keys, so this grant is not needed`,
    );
  const viaS3 = { 'kms:ViaService': `s3.${at.region}.amazonaws.com` };
  const alias = /^(?:arn:[^:]+:kms:[^:]*:[^:]*:)?(alias\/.+)$/.exec(key)?.[1];
  if (alias)
    return {
      Sid: 'ArchiveKey',
      Effect: 'Allow',
      Action: actions,
      Resource: `arn:${at.partition}:kms:${at.region}:${at.account}:key/*`,
      Condition: { StringEquals: viaS3, 'ForAnyValue:StringEquals': { 'kms:ResourceAliases': alias } },
    };
  const resource = key.startsWith('arn:')
    ? key
    : `arn:${at.partition}:kms:${at.region}:${at.account}:key/${key}`;
  return {
    Sid: 'ArchiveKey',
    Effect: 'Allow',
    Action: actions,
    Resource: resource,
    Condition: { StringEquals: viaS3 },
  };
}

/**
 * No key named. With archive.s3Sse aws:kms, S3 uses the AWS managed key aws/s3, whose key policy lets the account's
 * principals use it through S3: no statement needed. With archive.s3Sse unset the bucket's default encryption
 * decides, and a customer managed key there (as section 3 of docs/deployment.md sets up) needs grants this policy
 * cannot name: refused, so the archiver is not deployed to fail at its first write.
 */
function noKeyStatement(config: TtlstreamConfig, warnings: string[]): undefined {
  if (config.archive.s3Sse === 'aws:kms')
    warnings.push(
      'archive.s3Sse is aws:kms without archive.s3KmsKeyId: S3 encrypts with the AWS managed key aws/s3, which needs no statement; to use a key of yours, set archive.s3KmsKeyId (TTLSTREAM_ARCHIVE_S3_KMS_KEY_ID)',
    );
  if (config.archive.s3Sse === undefined)
    throw new ConfigError(
      "archive.s3Sse (TTLSTREAM_ARCHIVE_S3_SSE) is unset: the bucket's default encryption decides, and with a KMS key of yours the archiver needs kms:GenerateDataKey and kms:Decrypt on it; set archive.s3Sse to aws:kms with archive.s3KmsKeyId (TTLSTREAM_ARCHIVE_S3_KMS_KEY_ID), or to AES256, or give --kms-key",
    );
  return undefined;
}

function kafkaStatements(
  config: TtlstreamConfig,
  roles: RoleName[],
  options: IamPolicyOptions,
  at: { partition: string; region: string; account: string },
): PolicyStatement[] {
  const cluster = options.kafkaCluster ?? '*/*';
  if (!/^[^/\s]+\/[^/\s]+$/.test(cluster))
    throw new ValidationError(`--kafka-cluster: expected <cluster name>/<cluster uuid>, got "${cluster}"`);
  const arn = (kind: string, name?: string): string =>
    `arn:${at.partition}:kafka:${at.region}:${at.account}:${kind}/${cluster}${name === undefined ? '' : `/${name}`}`;
  const t = config.topics;
  const streamTopics =
    t.naming === 'shared'
      ? [t.shared]
      : options.tables !== undefined
        ? options.tables.map((table) => `${t.perTablePrefix}${table}`)
        : [`${t.perTablePrefix}*`];
  const grant = (key: keyof KafkaGrants): string[] =>
    sorted(roles.flatMap((r) => (KAFKA_GRANTS[r][key] ?? []).map((a) => `kafka-cluster:${a}`)));
  const out: PolicyStatement[] = [];
  const push = (sid: string, key: keyof KafkaGrants, resource: string | string[]): void => {
    const actions = grant(key);
    if (actions.length > 0) out.push({ Sid: sid, Effect: 'Allow', Action: actions, Resource: resource });
  };
  push('KafkaCluster', 'cluster', arn('cluster'));
  push(
    'KafkaStreamTopics',
    'streamTopics',
    streamTopics.map((topic) => arn('topic', topic)),
  );
  push('KafkaDeadLetterTopic', 'deadLetterTopic', arn('topic', t.deadLetter));
  push('KafkaArchiverGroup', 'group', arn('group', config.archive.groupId));
  return out;
}
