import { z } from 'zod';

/**
 * The one configuration contract. Every setting is described here, validated at start-up, and
 * documented from this schema (docs/configuration.md is generated from it by `npm run docs:config`).
 */
const port = z.number().int().min(1).max(65535);

export const SASL_MECHANISMS = [
  'plain',
  'scram-sha-256',
  'scram-sha-512',
  'oauthbearer',
  'aws-msk-iam',
] as const;
export type SaslMechanism = (typeof SASL_MECHANISMS)[number];

/** The archive of a configuration that names none: a folder that, in a container, dies with the container. */
export const DEFAULT_ARCHIVE_URL = 'file:///tmp/ttlstream-archive';

/** Server-side encryption of the archive's S3 objects (archive.s3Sse). */
export const S3_SSE_MODES = ['AES256', 'aws:kms'] as const;
export type S3SseMode = (typeof S3_SSE_MODES)[number];

/**
 * One flat object rather than a union per mechanism, so every field keeps one environment variable
 * (TTLSTREAM_KAFKA_SASL_*); which fields a mechanism needs is checked by the refinement below.
 */
export const KafkaSaslSchema = z
  .strictObject({
    mechanism: z.enum(SASL_MECHANISMS).describe('SASL mechanism'),
    username: z.string().min(1).optional().describe('plain and scram-*: the user'),
    password: z.string().min(1).optional().describe('plain and scram-*: its password'),
    tokenCommand: z
      .string()
      .min(1)
      .optional()
      .describe(
        'oauthbearer: a shell command that prints a token (a JWT, or `{"token": …, "expiresAt": ms}`) on stdout; run again before the token expires',
      ),
    tokenFile: z
      .string()
      .min(1)
      .optional()
      .describe(
        'oauthbearer: a file holding the token (a JWT, or `{"token": …, "expiresAt": ms}`), read again before the token expires (so a sidecar can rotate it)',
      ),
    region: z
      .string()
      .min(1)
      .optional()
      .describe('aws-msk-iam: the region of the MSK cluster; unset: `region`'),
  })
  .superRefine((sasl, ctx) => {
    const needs: Record<SaslMechanism, Array<keyof typeof sasl>> = {
      plain: ['username', 'password'],
      'scram-sha-256': ['username', 'password'],
      'scram-sha-512': ['username', 'password'],
      oauthbearer: [],
      'aws-msk-iam': [],
    };
    const allowed: Record<SaslMechanism, Array<keyof typeof sasl>> = {
      plain: ['username', 'password'],
      'scram-sha-256': ['username', 'password'],
      'scram-sha-512': ['username', 'password'],
      oauthbearer: ['tokenCommand', 'tokenFile'],
      'aws-msk-iam': ['region'],
    };
    for (const key of needs[sasl.mechanism])
      if (sasl[key] === undefined)
        ctx.addIssue({ code: 'custom', path: [key], message: `required with mechanism ${sasl.mechanism}` });
    for (const key of ['username', 'password', 'tokenCommand', 'tokenFile', 'region'] as const)
      if (sasl[key] !== undefined && !allowed[sasl.mechanism].includes(key))
        ctx.addIssue({ code: 'custom', path: [key], message: `not used by mechanism ${sasl.mechanism}` });
    if (
      sasl.mechanism === 'oauthbearer' &&
      (sasl.tokenCommand === undefined) === (sasl.tokenFile === undefined)
    )
      ctx.addIssue({
        code: 'custom',
        path: ['tokenCommand'],
        message: 'mechanism oauthbearer takes exactly one of tokenCommand and tokenFile',
      });
  });

/** TLS to the brokers with files of PEM text; read and checked at start-up (core/kafka-security.ts). */
export const KafkaSslSchema = z.strictObject({
  caFile: z
    .string()
    .min(1)
    .optional()
    .describe(
      "PEM file of the CA certificate(s) that signed the brokers' certificates; unset: the system CAs (plus NODE_EXTRA_CA_CERTS)",
    ),
  certFile: z
    .string()
    .min(1)
    .optional()
    .describe('PEM file of the client certificate (mutual TLS); needs keyFile'),
  keyFile: z.string().min(1).optional().describe('PEM file of the private key of certFile'),
  keyPassphrase: z.string().min(1).optional().describe('passphrase of an encrypted keyFile'),
  servername: z
    .string()
    .min(1)
    .optional()
    .describe(
      "name the brokers' certificates are checked against (and sent as SNI); unset: each broker's host",
    ),
  rejectUnauthorized: z
    .boolean()
    .default(true)
    .describe('false accepts any certificate (a warning on every start): for a test, never in production'),
});

/** A Confluent-compatible schema registry: turns on the Confluent wire format on the stream topics (decision 0025). */
export const SchemaRegistrySchema = z
  .strictObject({
    url: z
      .string()
      .url()
      .describe(
        'base URL of the Confluent-compatible API (e.g. https://registry:8081, or …/apis/ccompat/v7 for Apicurio); set: Avro records are written in the Confluent wire format (magic byte 0, 4-byte schema id, Avro body)',
      ),
    username: z.string().min(1).optional().describe('basic authentication: the user (with password)'),
    password: z.string().min(1).optional().describe('basic authentication: its password'),
    bearerToken: z.string().min(1).optional().describe('bearer authentication: the token'),
    bearerTokenFile: z
      .string()
      .min(1)
      .optional()
      .describe('bearer authentication: a file holding the token, read again at every registry request'),
    ssl: KafkaSslSchema.optional().describe(
      'TLS to an https registry: the same fields as kafka.ssl (caFile, certFile, keyFile, …); unset: the system CAs',
    ),
    subjectNameStrategy: z
      .enum(['topic', 'record'])
      .default('topic')
      .describe(
        'topic: the REMOVE schema under `<topic>-value` (TopicNameStrategy), the retraction schema under `<topic>-ttlstream.Retraction`; record: each under its record full name (RecordNameStrategy)',
      ),
    autoRegister: z
      .boolean()
      .default(true)
      .describe(
        'register the current schemas at start-up; false: they must already be registered (`ttlstream schemas register`), else start-up fails',
      ),
    requestTimeoutMs: z
      .number()
      .int()
      .positive()
      .default(10_000)
      .describe('one registry request fails after this'),
  })
  .superRefine((r, ctx) => {
    if ((r.username === undefined) !== (r.password === undefined))
      ctx.addIssue({
        code: 'custom',
        path: ['password'],
        message: 'basic authentication needs both username and password',
      });
    const bearer = r.bearerToken !== undefined || r.bearerTokenFile !== undefined;
    if (bearer && r.username !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['bearerToken'],
        message: 'choose basic (username, password) or bearer authentication, not both',
      });
    if (r.bearerToken !== undefined && r.bearerTokenFile !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['bearerTokenFile'],
        message: 'set bearerToken or bearerTokenFile, not both',
      });
  });

export const ConfigSchema = z
  .object({
    region: z.string().min(1).default('us-east-1').describe('AWS region used for clients and stream ARNs'),
    instanceId: z
      .string()
      .min(1)
      .max(200)
      .regex(/^[^#]+$/, 'instance ids contain no "#"')
      .optional()
      .describe(
        "stable identity of this `ttlstream run` process in scan-segment and mark-shard leases: restarted with the same id, on any machine, it takes its leases back at once instead of waiting scanner.leaseMs/producer.leaseMs. MUST be unique among running processes (two live processes with one id would both work the same segments and shards). Unset: host:pid:random@machine, new at every start; a restart on the same machine (same boot and PID namespace) still takes a dead predecessor's leases at once (decision 0020)",
      ),
    dynamodb: z
      .object({
        endpoint: z
          .url()
          .optional()
          .describe('DynamoDB-API endpoint; unset means the AWS default for the region'),
        accessKeyId: z.string().min(1).optional().describe('static access key (else the SDK default chain)'),
        secretAccessKey: z.string().min(1).optional().describe('static secret key'),
        maxAttempts: z.number().int().min(1).max(20).default(6).describe('SDK attempts per request'),
        connectionTimeoutMs: z
          .number()
          .int()
          .positive()
          .default(3000)
          .describe('an attempt that has not connected by then fails (and is retried)'),
        requestTimeoutMs: z
          .number()
          .int()
          .positive()
          .default(10_000)
          .describe(
            'an attempt without a response by then, or whose connection is silent that long, fails (and is retried): a peer that vanished without closing the connection would otherwise hold the request for the SDK default of 5 minutes',
          ),
      })
      .strict()
      .prefault({}),
    kafka: z
      .object({
        brokers: z
          .array(z.string().regex(/^[^\s:]+:\d+$/, 'expected host:port'))
          .min(1)
          .default(['127.0.0.1:19092']),
        clientId: z.string().min(1).default('ttlstream'),
        ssl: z
          .union([z.boolean(), KafkaSslSchema])
          .default(false)
          .describe(
            'TLS to the brokers: true (system CAs, plus NODE_EXTRA_CA_CERTS) or the object of its fields below; setting any field turns TLS on',
          ),
        sasl: KafkaSaslSchema.optional().describe('SASL authentication'),
        allowPlaintextSasl: z
          .boolean()
          .default(false)
          .describe(
            'allow SASL without TLS (credentials or tokens then cross the network in clear); refused at start-up otherwise',
          ),
        connectionTimeoutMs: z.number().int().positive().default(3000),
        requestTimeoutMs: z.number().int().positive().default(30000),
      })
      .strict()
      .superRefine((kafka, ctx) => {
        if (kafka.sasl && kafka.ssl === false && !kafka.allowPlaintextSasl)
          ctx.addIssue({
            code: 'custom',
            path: ['ssl'],
            message:
              'SASL without TLS would send the credentials in clear: turn TLS on (kafka.ssl), or set kafka.allowPlaintextSasl (TTLSTREAM_KAFKA_ALLOW_PLAINTEXT_SASL) to true for a network you trust',
          });
      })
      .prefault({}),
    topics: z
      .object({
        naming: z
          .enum(['shared', 'per-table'])
          .default('shared')
          .describe('one topic for all tables, or one per table'),
        shared: z.string().min(1).default('ttlstream.remove').describe('the shared stream topic'),
        perTablePrefix: z.string().min(1).default('ttlstream.remove.').describe('prefix of per-table topics'),
        deadLetter: z
          .string()
          .min(1)
          .default('ttlstream.dead-letter')
          .describe('poison records from the archiver'),
        partitions: z.number().int().min(1).max(1000).default(6),
        replicationFactor: z.number().int().min(1).default(1),
        minInsyncReplicas: z.number().int().min(1).default(1),
        retentionMs: z
          .number()
          .int()
          .positive()
          .default(86_400_000)
          .describe('stream retention (24 h, as DynamoDB Streams)'),
        encoding: z.enum(['avro', 'json']).default('avro').describe('record encoding on the stream topics'),
      })
      .strict()
      .prefault({}),
    schemas: z
      .object({
        registry: SchemaRegistrySchema.optional().describe(
          'a Confluent-compatible schema registry; unset: Avro records carry their schema fingerprint in a header only',
        ),
      })
      .strict()
      .prefault({}),
    tables: z
      .object({
        control: z.string().min(3).default('ttlstream_control').describe('TTL settings and leases'),
        marks: z
          .string()
          .min(3)
          .default('ttlstream_marks')
          .describe('durable deletion marks (scanner → producer)'),
      })
      .strict()
      .prefault({}),
    archive: z
      .object({
        url: z
          .string()
          .regex(/^(file:\/\/\/|s3:\/\/[^/]+)/, 'expected file:///path or s3://bucket/prefix')
          .default(DEFAULT_ARCHIVE_URL)
          .describe(
            'where the archiver writes: s3://bucket/prefix, or file:///path; `ttlstream run` with the archiver role refuses the default outside a local stack (set it explicitly, even to file:///tmp/ttlstream-archive)',
          ),
        s3Endpoint: z.url().optional().describe('S3-compatible endpoint; unset means AWS'),
        s3ForcePathStyle: z.boolean().default(true),
        s3AccessKeyId: z.string().min(1).optional(),
        s3SecretAccessKey: z.string().min(1).optional(),
        s3Sse: z
          .enum(S3_SSE_MODES)
          .optional()
          .describe(
            "server-side encryption asked for on every object the archive writes (each PutObject and multipart upload): `AES256` (S3-managed keys) or `aws:kms` (a KMS key: s3KmsKeyId, else the account's aws/s3 key); unset: the bucket's default encryption",
          ),
        s3KmsKeyId: z
          .string()
          .min(1)
          .optional()
          .describe(
            'with s3Sse `aws:kms`: the KMS key (key id, key ARN or alias ARN) the objects are encrypted with; the roles that write or read the archive need kms:GenerateDataKey and kms:Decrypt on it (`ttlstream iam-policy`)',
          ),
        s3IdleTimeoutMs: z
          .number()
          .int()
          .min(1000)
          .default(30_000)
          .describe(
            'an S3 attempt whose connection moves no byte either way for this long fails (and is retried by the SDK, then by the roll); also bounds connecting. An idle limit, not a total, so a large upload on a slow but working link is not cut; without it a peer that vanished without closing the connection would hold a put, and its partition, for ever',
          ),
        format: z
          .enum(['avro', 'parquet'])
          .default('avro')
          .describe(
            "format of the data files new rolls write: `avro` (object containers of the stream contract's archived-record, deflate) or `parquet` (typed columns, zstd; docs/archive-columns.md). Readers read both; a table's archive switches at a roll boundary",
          ),
        avroDeflateLevel: z
          .number()
          .int()
          .min(1)
          .max(9)
          .default(4)
          .describe(
            "deflate level of Avro data files. Deflate is most of the Avro archiver's CPU: 4 wrote the bench's rows 3 % larger than 6 (zlib's default) for about half the deflate CPU (9 against 16 µs a row), 1 16 % larger for a quarter of it (bench/README.md, archiver)",
          ),
        parquetZstdLevel: z
          .number()
          .int()
          .min(1)
          .max(22)
          .default(3)
          .describe(
            "zstd level of Parquet data files: 3 (zstd's default) kept the measured rows a fifth smaller than 1 for about 3 µs more of an encoding thread's CPU per row (docs/decisions/0031)",
          ),
        groupId: z.string().min(1).default('ttlstream-archiver'),
        rollBytes: z
          .number()
          .int()
          .positive()
          .default(64 * 1024 * 1024)
          .describe(
            "roll a file at this size: the target file size, counted in uncompressed archive-row bytes (on disk a file of ~1.2 KB records with text attributes is about an eighth of it, Parquet or Avro; docs/scaling.md); rollMs bounds a file's age",
          ),
        rollMs: z.number().int().positive().default(60_000).describe('roll a file at this age'),
        lagAlertMs: z
          .number()
          .int()
          .positive()
          .default(3_600_000)
          .describe('alert when the oldest unarchived record is older'),
        retentionDays: z
          .number()
          .int()
          .positive()
          .optional()
          .describe(
            "days the archive keeps a record after its deletion (default for every table; a table's TTL settings `archiveRetentionDays` override it); unset keeps the archive for ever. Files past it are removed by `ttlstream archive purge` and by the archiver every purgeIntervalMs, each removal recorded under _purge/",
          ),
        purgeIntervalMs: z
          .number()
          .int()
          .min(0)
          .default(3_600_000)
          .describe(
            'how often an archiver process removes archive files past their retention; 0 turns the schedule off (then run `ttlstream archive purge` yourself, or use the S3 lifecycle rule `ttlstream archive lifecycle` prints)',
          ),
        compactIntervalMs: z
          .number()
          .int()
          .min(0)
          .default(600_000)
          .describe(
            "how often an archiver process compacts closed hours (docs/decisions/0037): an hour's rolls of every partition merged into files of compactTargetBytes, rows in key order, with a key index per day; one process at a time per table (the table's archive lock, `_lock/`), so every archiver may run it. 0 turns the schedule off (then run `ttlstream archive compact` yourself)",
          ),
        compactAfterMs: z
          .number()
          .int()
          .min(60_000)
          .default(7_200_000)
          .describe(
            'an hour is compacted once it ended this long ago, when its rolls have landed; a roll of it that lands later (a partition catching up after an outage) is compacted by a later run, into a file of its own',
          ),
        compactTargetBytes: z
          .number()
          .int()
          .min(1024 * 1024)
          .max(4 * 1024 ** 3)
          .default(128 * 1024 * 1024)
          .describe(
            "data-file bytes a compacted file holds at most (an hour's rolls, by their sizes on disk, packed into as few files); a compaction holds one such file's rows in memory while it builds it (bench/README.md, archive-scale), so compactMaxRows bounds it too",
          ),
        compactMaxRows: z
          .number()
          .int()
          .min(1000)
          .max(10_000_000)
          .default(100_000)
          .describe(
            "rows a compacted file holds at most, whichever of it and compactTargetBytes comes first: a compaction holds one file's rows decoded in memory, about 1–1.5 KB each beside the archiver's ~0.45 GB (bench/README.md, archive-scale), so the default fits the archiver's 1 GiB limit (deploy/k8s); raise both with the archivers' memory for fewer, larger files",
          ),
        monitorIntervalMs: z
          .number()
          .int()
          .positive()
          .optional()
          .describe('lag/loss check and new-topic listing interval; unset: 15 s and 30 s'),
        sessionTimeoutMs: z
          .number()
          .int()
          .min(1000)
          .optional()
          .describe('consumer-group session timeout, heartbeat at a fifth of it; unset: 30 s'),
        rebalanceTimeoutMs: z
          .number()
          .int()
          .min(1000)
          .optional()
          .describe(
            'how long the group waits for members to rejoin in a rebalance; a join left unanswered (a silent connection) is given up after this + 5 s and the consumer replaced; unset: 60 s',
          ),
      })
      .strict()
      .superRefine((archive, ctx) => {
        if (archive.s3KmsKeyId !== undefined && archive.s3Sse !== 'aws:kms')
          ctx.addIssue({
            code: 'custom',
            path: ['s3KmsKeyId'],
            message:
              'a KMS key needs archive.s3Sse (TTLSTREAM_ARCHIVE_S3_SSE) aws:kms; S3 would refuse the key with AES256 or without it',
          });
      })
      .prefault({}),
    api: z
      .object({
        host: z.string().min(1).default('127.0.0.1'),
        port: port.default(8080),
        tokens: z
          .array(z.string().min(16, 'tokens must be at least 16 characters'))
          .default([])
          .describe('bearer tokens for mutating REST calls'),
        awsCredentials: z
          .array(z.strictObject({ accessKeyId: z.string().min(1), secretAccessKey: z.string().min(1) }))
          .default([])
          .describe('keys accepted for SigV4 on the AWS-compatible endpoint'),
        openReads: z
          .boolean()
          .default(false)
          .describe(
            'allow read-only calls without authentication (health, readiness and metrics are always open); anonymous answers carry no item keys and no changedBy, and scan at most 1000 items',
          ),
        hosts: z
          .array(z.string().min(1))
          .default([])
          .describe(
            'Host header values (name or name:port) the server answers to, checked against the signed Host of SigV4 requests; always includes api.host, localhost, 127.0.0.1 and [::1] on the listening port',
          ),
        awsIdempotentUpdates: z
          .boolean()
          .default(false)
          .describe(
            "AWS-compatible endpoint: enabling TTL that is enabled with the same attribute, or disabling TTL that is disabled, succeeds without change (as ttlstream's REST API does) instead of DynamoDB's ValidationException",
          ),
        bodyLimitBytes: z
          .number()
          .int()
          .positive()
          .default(64 * 1024),
        headersTimeoutMs: z
          .number()
          .int()
          .min(100)
          .default(10_000)
          .describe('a connection that has not sent complete request headers by then is closed'),
        requestTimeoutMs: z
          .number()
          .int()
          .min(100)
          .default(30_000)
          .describe(
            'a request not received completely (headers and body) by then is answered 408 and closed',
          ),
        idleTimeoutMs: z
          .number()
          .int()
          .min(100)
          .default(60_000)
          .describe('a connection with no traffic for this long is closed'),
        maxConnections: z
          .number()
          .int()
          .min(1)
          .default(256)
          .describe(
            'open connections served at once; a request on a further one is answered 503 with Retry-After: 1 and its connection closed; past 4 times this, connections are closed at once',
          ),
        ttlPropagationMs: z
          .number()
          .int()
          .min(0)
          .default(2000)
          .describe('ENABLING/DISABLING → ENABLED/DISABLED delay'),
      })
      .strict()
      .prefault({}),
    scanner: z
      .object({
        totalSegments: z.number().int().min(1).max(1_000_000).default(8),
        leaseMs: z
          .number()
          .int()
          .min(1000)
          .default(10_000)
          .describe('segment lease; a dead owner loses it after this'),
        readRateLimit: z
          .number()
          .positive()
          .default(5000)
          .describe('items read per second per table (ceiling)'),
        passIntervalMs: z.number().int().min(0).default(1000).describe('pause between passes over a segment'),
        backlogPassIntervalMs: z
          .number()
          .int()
          .min(0)
          .default(10_000)
          .describe(
            'after a pass that left marks, scan again once probes of a sample of them have seen none deleted for this long (producers stalled, table paused); also the longest wait between two probes',
          ),
        backlogMaxPauseMs: z
          .number()
          .int()
          .min(0)
          .default(120_000)
          .describe(
            'longest pause after a pass whose marks are still being deleted (the scanner probes a sample of them and scans again shortly before they are all gone)',
          ),
        remarkAfterMs: z
          .number()
          .int()
          .min(0)
          .default(60_000)
          .describe('a mark this scanner wrote is not written again for this long (0: every pass)'),
        markDelayMs: z
          .number()
          .int()
          .min(0)
          .default(1000)
          .describe(
            "longest a found expired item waits before its mark is written: a table's marks are gathered over pages into one row per shard, written when a shard has a producer batch (producer.batchSize) or after this (0: every page)",
          ),
        bellIntervalMs: z
          .number()
          .int()
          .min(0)
          .default(1000)
          .describe(
            "a shard's doorbell is rung at most this often by one scanner (the last ring trails the interval; 0: after every mark write)",
          ),
        pageSize: z.number().int().min(1).max(10_000).default(500),
        indexPollMs: z
          .number()
          .int()
          .min(10)
          .default(500)
          .describe(
            'index mode: pause before querying a shard of the expiry index again after a query that reached its end',
          ),
        indexRewindMs: z
          .number()
          .int()
          .min(0)
          .default(60_000)
          .describe(
            "index mode: a shard's query continues after the last item it read; this often it starts from the lowest expiry again, for items that reached the index late (the index is eventually consistent) or were kept (0: every query); put off, up to 10 times in a row, while the head of the shard is the scanner's own backlog being deleted",
          ),
        sweepIntervalMs: z
          .number()
          .int()
          .min(1000)
          .default(86_400_000)
          .describe(
            'index mode: the safety-net full scan of a segment runs this long after its last completed sweep (catches items written without the stamp)',
          ),
        sweepReadRateLimit: z
          .number()
          .positive()
          .default(500)
          .describe('index mode: items read per second per table by the safety-net sweep (ceiling)'),
      })
      .strict()
      .prefault({}),
    producer: z
      .object({
        concurrency: z
          .number()
          .int()
          .min(1)
          .max(1024)
          .default(32)
          .describe(
            'conditional deletes in flight per producer process, across its shards: at a DynamoDB round trip of R ms a producer deletes at most concurrency ÷ R (32 at 8 ms: 4,000/s), above what one vCPU does (≈ 1,200/s, docs/scaling.md); raise it for a slower round trip',
          ),
        batchSize: z.number().int().min(1).max(1000).default(250).describe('marks taken per batch'),
        shards: z.number().int().min(1).max(4096).default(16).describe('mark shards; producers lease shards'),
        leaseMs: z.number().int().min(1000).default(10_000),
        pollMs: z
          .number()
          .int()
          .min(10)
          .default(200)
          .describe('first wait after a sweep that found nothing; doubles up to 1 s between doorbell checks'),
        idleSweepMs: z
          .number()
          .int()
          .min(100)
          .default(30_000)
          .describe('an idle shard is swept at least this often even if its doorbell did not ring'),
        dryRun: z.boolean().default(false).describe('evaluate and log, never delete or publish'),
      })
      .strict()
      .prefault({}),
    streams: z
      .object({
        endpoint: z
          .url()
          .optional()
          .describe(
            "DynamoDB Streams endpoint of the streams role; unset: dynamodb.endpoint when that is set (a DynamoDB-API server that serves streams answers both), else AWS's for the region",
          ),
        removes: z
          .enum(['ttl', 'all'])
          .default('ttl')
          .describe(
            "which REMOVE records of a followed stream are published: `ttl`, DynamoDB's TTL deletions (userIdentity Service/dynamodb.amazonaws.com); `all`, every deletion, those without that identity published without one",
          ),
        startPosition: z
          .enum(['trim-horizon', 'latest'])
          .default('trim-horizon')
          .describe(
            "where a table's stream is read from the first time it is followed: `trim-horizon`, everything still on the stream (its last 24 hours); `latest`, only what comes after",
          ),
        leaseMs: z
          .number()
          .int()
          .min(1000)
          .default(10_000)
          .describe("shard leases; a dead reader's shards are taken over after this"),
        pollMs: z
          .number()
          .int()
          .min(100)
          .default(1000)
          .describe(
            'wait after a read of an open shard that found nothing new (DynamoDB Streams allows about 4 reads a second per shard, shared by every reader of the stream)',
          ),
        discoverMs: z
          .number()
          .int()
          .min(500)
          .default(10_000)
          .describe("how often each followed table's streams and shards are listed, to find new ones"),
        maxRecords: z
          .number()
          .int()
          .min(1)
          .max(1000)
          .default(1000)
          .describe("records asked for per GetRecords (at most 1000, DynamoDB's limit)"),
      })
      .strict()
      .prefault({}),
    guard: z
      .object({
        maxExpiredFraction: z
          .number()
          .min(0)
          .max(1)
          .default(0.5)
          .describe(
            'pause a table when more of a pass is expired (index mode: more of its items are due, counted each indexRewindMs)',
          ),
        minItemsForFraction: z
          .number()
          .int()
          .min(0)
          .default(1000)
          .describe('passes smaller than this are not judged'),
        maxDeletesPerMinute: z
          .number()
          .int()
          .positive()
          .default(1_000_000)
          .describe('pause above this deletion rate'),
        gaugeRefreshMs: z
          .number()
          .int()
          .min(1000)
          .default(15_000)
          .describe(
            'how often each producer re-reads the stored guard state of every enabled table for the ttlstream_guard_paused gauge (one read per enabled table per interval), so every producer reports the same state whoever paused, confirmed or cancelled',
          ),
      })
      .strict()
      .prefault({}),
    metrics: z
      .object({
        port: port
          .optional()
          .describe(
            'serve /metrics here when the API role is off, with the probes /healthz (the process answers) and /readyz (its roles have started and it is not stopping), on api.host',
          ),
      })
      .strict()
      .prefault({}),
    log: z
      .object({
        level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
      })
      .strict()
      .prefault({}),
  })
  .strict();

export type TtlstreamConfig = z.infer<typeof ConfigSchema>;
export type ConfigInput = z.input<typeof ConfigSchema>;

/**
 * The sections, for the parts that read one or a few of them: a role or part takes the slice it reads (its input)
 * and resolves its options from it once at start-up, never the whole TtlstreamConfig.
 */
export type DynamodbSettings = TtlstreamConfig['dynamodb'];
export type ScannerSettings = TtlstreamConfig['scanner'];
export type ProducerSettings = TtlstreamConfig['producer'];
export type StreamsSettings = TtlstreamConfig['streams'];
export type ArchiveSettings = TtlstreamConfig['archive'];
export type ApiSettings = TtlstreamConfig['api'];
export type TopicsSettings = TtlstreamConfig['topics'];
export type TablesSettings = TtlstreamConfig['tables'];
export type GuardSettings = TtlstreamConfig['guard'];
export type SchemasSettings = TtlstreamConfig['schemas'];
