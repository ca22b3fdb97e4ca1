import { ERROR_CODES, type ErrorCodeInfo } from '../../core/error-codes';
import { EXIT } from './exit-codes';

const HEADER = `# Errors

<!-- Generated from core/error-codes.ts by \`npm run docs:errors\`; a unit test fails when this file is stale. -->

Every error ttlstream throws is a \`TtlstreamError\` (exported from the package) with two fields to branch on
instead of the message text:

- \`code\`: stable, one per class below; codes are added, never renamed. Logs carry it as \`err.code\`.
- \`retryable\`: whether the same operation may succeed if tried again. ttlstream's own retries
  (\`core/retry.ts\`, one back-off with full jitter) read it: a request is retried only when its error says so (or,
  for an AWS SDK error, when it is a throttle, a conflict, a lost connection or marked \`$retryable\` by the SDK); a
  long-running worker (a producer shard, a scanner segment or index shard, a dead letter) retries any error but
  stops at one whose \`retryable\` is false and logs it with its code.

The \`ttlstream\` command's exit code follows from the class: ${EXIT.usage} for a bad setting or argument,
${EXIT.failure} for any other failure. A failure that wraps another error (its \`cause\`, e.g. a role that could
not start because of a bad setting) exits with the code of that cause. The exit codes that are not errors
(${EXIT.empty}: nothing matched, ${EXIT.breach}: \`audit\` found a breach) are described with their commands.

| code | class | retryable | exit code | meaning |
| --- | --- | --- | --- | --- |
`;

function row(code: string, info: ErrorCodeInfo): string {
  const cells = [
    `\`${code}\``,
    `\`${info.className}\``,
    info.retryable ? 'yes' : 'no',
    String(EXIT[info.exit]),
  ];
  return `| ${cells.join(' | ')} | ${info.meaning.replace(/\|/g, '\\|')} |`;
}

/** docs/errors.md: the table of every error code, its class, retry flag and exit code. */
export function renderErrorDocs(): string {
  const rows = Object.entries(ERROR_CODES).map(([code, info]) => row(code, info));
  return `${HEADER}${rows.join('\n')}\n`;
}
