import { Command, Option } from 'commander';
import type { CliContext } from '../kit/context';
import { action, argParser, example, type CommandEnv } from '../kit/command-kit';
import { printJson } from '../kit/io';
import { ROLE_NAMES, parseRoles, type RoleName } from '../kit/run-roles';

interface IamPolicyFlags {
  roles: RoleName[];
  tables?: string;
  bucket?: string;
  account?: string;
  kafkaCluster?: string;
  mskIam?: boolean;
  kmsKey?: string;
  partition?: string;
  envFile?: string;
}

/** `ttlstream iam-policy`: the least-privilege IAM policy (JSON) of a process running the chosen roles. */
export function iamPolicyCommand(env: CommandEnv): Command {
  const cmd = new Command('iam-policy')
    .description(
      'print the least-privilege IAM policy (JSON) of a `ttlstream run` process with the chosen roles: DynamoDB on ' +
        'the TTL tables and ttlstream’s own tables, S3 (and KMS) on the archive, MSK IAM (kafka-cluster:*) on the ' +
        'topics and the archiver’s group. Names come from the configuration the pods read (--env-file with their ' +
        'ConfigMap, --config, or the environment); nothing is contacted. Refuses (exit 2) an archiver policy ' +
        'without the archive’s S3 or KMS statements',
    )
    .option(
      '--env-file <file>',
      'read the settings from a file of NAME=VALUE lines, as a ConfigMap gives them to the pods ' +
        '(`kubectl create configmap --from-env-file` format; its variables win over the environment)',
    )
    .option(
      '--roles <list>',
      `comma-separated roles (${ROLE_NAMES.join(', ')}); one Deployment per role wants one policy per role`,
      argParser(parseRoles),
      [...ROLE_NAMES],
    )
    .option(
      '--tables <list>',
      'comma-separated TTL tables (default: every table of the account, with a warning)',
    )
    .option('--bucket <s3url>', 'the archive, s3://bucket/prefix or a bucket name (default: archive.url)')
    .option('--account <id>', 'AWS account id in the ARNs (default: *)')
    .option('--kafka-cluster <name/uuid>', 'the MSK cluster, the last two parts of its ARN (default: */*)')
    .addOption(
      new Option(
        '--msk-iam',
        'include the kafka-cluster statements (default: when kafka.sasl.mechanism is aws-msk-iam)',
      ),
    )
    .option(
      '--kms-key <key>',
      'the archive’s KMS key: id, ARN, alias/name or alias ARN (default: archive.s3KmsKeyId)',
    )
    .option('--partition <name>', 'AWS partition of the ARNs (aws, aws-cn, aws-us-gov)', 'aws')
    .action(action<IamPolicyFlags>(env, printPolicy, { quietLevel: 'warn' }));
  return example(
    cmd,
    'ttlstream iam-policy --env-file ttlstream.env --roles archiver --account 123456789012 > archiver-policy.json',
    'ttlstream iam-policy --roles scanner --tables orders,carts --account 123456789012 > scanner-policy.json',
    'ttlstream iam-policy --roles archiver --bucket s3://my-archive/ttl --msk-iam --kafka-cluster prod/0a1b2c3d-4e5f-6789-abcd-ef0123456789-1',
  );
}

/** `iam-policy`'s action: the IAM policy of the roles, warnings on stderr. */
async function printPolicy(ctx: CliContext, opts: IamPolicyFlags): Promise<number | void> {
  const { iamPolicy } = await import('./policy');
  const tables = opts.tables
    ?.split(',')
    .map((t) => t.trim())
    .filter((t) => t.length > 0);
  const { policy, warnings } = iamPolicy(ctx.config, {
    roles: opts.roles,
    ...(tables !== undefined ? { tables } : {}),
    ...(opts.bucket !== undefined ? { bucket: opts.bucket } : {}),
    ...(opts.account !== undefined ? { account: opts.account } : {}),
    ...(opts.kafkaCluster !== undefined ? { kafkaCluster: opts.kafkaCluster } : {}),
    ...(opts.mskIam ? { mskIam: true } : {}),
    ...(opts.kmsKey !== undefined ? { kmsKey: opts.kmsKey } : {}),
    ...(opts.partition !== undefined ? { partition: opts.partition } : {}),
  });
  const { sourceOf } = await import('../../core/config');
  // The pods read the region from their ConfigMap: a policy for the default region is for the wrong one.
  if (sourceOf(ctx.configSources(), 'region') === 'default')
    warnings.unshift(
      `region is not set: the ARNs are for ${ctx.config.region}, the default; give the deployment's settings (--env-file, --config) or --region`,
    );
  for (const w of warnings) ctx.io.stderr.write(`ttlstream: warning: ${w}\n`);
  printJson(ctx.io, policy);
}
