import { envName, MERGED_SECTIONS, OLD_NAMES_REFUSED_IN, settingsTable } from '../../core/config';

type Node = {
  default?: unknown;
  description?: string;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  pattern?: string;
  format?: string;
  items?: { type?: string | string[] };
};

function constraints(node: Node): string {
  const out: string[] = [];
  if (node.enum) out.push(`one of ${node.enum.map((e) => `\`${String(e)}\``).join(', ')}`);
  if (node.minimum !== undefined) out.push(`≥ ${node.minimum}`);
  if (node.exclusiveMinimum !== undefined) out.push(`> ${node.exclusiveMinimum}`);
  if (node.maximum !== undefined && node.maximum < Number.MAX_SAFE_INTEGER) out.push(`≤ ${node.maximum}`);
  if (node.minLength !== undefined && node.minLength > 1) out.push(`at least ${node.minLength} characters`);
  if (node.format === 'uri') out.push('a URL');
  if (node.pattern) out.push(`matches \`${node.pattern}\``);
  return out.join('; ');
}

/** Variables read outside the zod schema; kept here so the reference lists them too. */
const OTHER_VARIABLES: Array<[string, string, string]> = [
  ['TTLSTREAM_CONFIG', 'every command', 'JSON configuration file (same as `--config <file>`)'],
  [
    'TTLSTREAM_LOCAL_STACK',
    'every command',
    'use the local stack whose `endpoints.json` is in this folder (e.g. `.ttlstream`; same as `--local-stack <dir>`). Unset: no endpoints file is read, and a command that finds one in `./.ttlstream` says it is not used. Set but no file there: exit 2',
  ],
  [
    'TTLSTREAM_STATE_DIR',
    '`npm run infra:up`, `ttlstream demo`',
    "where the local stack's `endpoints.json` is written (default `./.ttlstream`)",
  ],
  [
    'TTLSTREAM_QUIET',
    'every command',
    '`1`: no `endpoints: ...` line (nor the unused-endpoints-file note) on stderr; same as `--quiet`',
  ],
  [
    'TTLSTREAM_SHUTDOWN_TIMEOUT',
    '`ttlstream run`',
    'graceful-stop budget, a duration such as `45s` (default `30s`; same as `--shutdown-timeout`)',
  ],
  [
    'NODE_EXTRA_CA_CERTS',
    'every command (read by Node.js at start)',
    'PEM file of extra CA certificates trusted by every TLS client of the process: the Kafka brokers (when `kafka.ssl` has no `caFile`, which replaces the trusted CAs for Kafka), and the DynamoDB and S3 endpoints. The one way to trust a private CA for all of them (docs/kafka-security.md)',
  ],
  ['NO_COLOR', 'every command', 'set to anything non-empty: no colours even on a terminal'],
  [
    '<SERVICE>_SERVICE_HOST, _SERVICE_PORT[_<NAME>], _PORT, _PORT_<n>_<TCP/UDP/SCTP>[_PROTO/_PORT/_ADDR]',
    'nothing: ignored',
    "the variables Kubernetes gives a pod for each Service of its namespace (unless `enableServiceLinks: false`): for a Service named `ttlstream-api`, `TTLSTREAM_API_SERVICE_HOST`, `TTLSTREAM_API_PORT=tcp://10.0.0.1:8080`, … A `TTLSTREAM_*` variable whose name and value both have one of these shapes is not refused as an unknown setting. On a setting's own variable (`TTLSTREAM_API_PORT`, `TTLSTREAM_METRICS_PORT`) such a value is ignored with a warning and the setting keeps its config-file or default value (decision 0027)",
  ],
];

function cell(s: string): string {
  return s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

/**
 * docs/configuration.md, rendered from the zod schema via `settingsTable()` so the reference cannot
 * drift from the code: `npm run docs:config` writes it and a unit test fails when the file is stale.
 */
export function renderConfigDocs(): string {
  const rows = settingsTable();
  const sections = new Map<string, typeof rows>();
  for (const row of rows) {
    const section = row.path.length > 1 ? (row.path[0] as string) : '(top level)';
    sections.set(section, [...(sections.get(section) ?? []), row]);
  }
  const out: string[] = [
    '# Configuration reference',
    '',
    '<!-- Generated from core/config-schema.ts by `npm run docs:config`. Do not edit by hand. -->',
    '',
    'Every setting can come from, lowest precedence first: the schema default, the local stack file',
    '`.ttlstream/endpoints.json` (written by `npm run infra:up`; read only when `TTLSTREAM_LOCAL_STACK` or',
    '`--local-stack` names its folder), a JSON config file (`--config <file>` or',
    '`TTLSTREAM_CONFIG`), the environment variable shown below (`ttlstream config` and `iam-policy` also read',
    "them from `--env-file <file>`, a ConfigMap's `NAME=VALUE` lines, over the environment), and finally",
    'command-line flags.',
    'The configuration is validated at start-up; a bad value stops the process with one line naming the',
    'setting and its variable, and exit code 2. `ttlstream config` prints the effective configuration',
    '(secrets redacted).',
    '',
    'Environment values: numbers as digits, booleans as `true`/`false` (or `1`/`0`), lists of strings',
    'comma-separated (`a:1,b:2`), lists of objects and objects as JSON.',
    '',
  ];
  for (const [section, list] of sections) {
    out.push(
      `## ${section}`,
      '',
      '| Setting | Environment variable | Type | Default | Description |',
      '| --- | --- | --- | --- | --- |',
    );
    for (const row of list) {
      const node = row.node as Node;
      const type = row.type === 'array' ? `array of ${String(node.items?.type ?? 'string')}` : row.type;
      const dflt = node.default === undefined ? '(unset)' : `\`${JSON.stringify(node.default)}\``;
      const limits = constraints(node);
      const desc = [node.description ?? '', limits ? `(${limits})` : '']
        .filter((s) => s.length > 0)
        .join(' ');
      out.push(`| \`${row.path.join('.')}\` | \`${row.env}\` | ${type} | ${cell(dflt)} | ${cell(desc)} |`);
    }
    out.push('');
  }
  out.push(
    '## Old names',
    '',
    `Still accepted, each with a warning naming the new one; ${OLD_NAMES_REFUSED_IN} refuses them.`,
    '',
    '| Old setting | Old variable | Now |',
    '| --- | --- | --- |',
    ...MERGED_SECTIONS.flatMap(({ from, into, keys }) =>
      keys.map(
        (key) =>
          `| \`${from}.${key}\` | \`${envName([from, key])}\` | \`${into}.${key}\` (\`${envName([into, key])}\`) |`,
      ),
    ),
    '',
    '## Outside the schema',
    '',
    '| Variable | Used by | Meaning |',
    '| --- | --- | --- |',
    ...OTHER_VARIABLES.map(([name, by, meaning]) => `| \`${name}\` | ${by} | ${cell(meaning)} |`),
    '',
  );
  return out.join('\n');
}
