/**
 * Every `code` a ttlstream error carries, with what it means: the one list that docs/errors.md is generated from
 * (`npm run docs:errors`; a unit test fails when the two differ). A class names its code from this list, so a new
 * code cannot be thrown before it is documented. Codes are part of the interface (logs, alerts and scripts match
 * on them): add, never rename.
 *
 * - `retryable`: the default of the error's `retryable` flag; `core/retry.ts` retries only what says so.
 * - `exit`: the `ttlstream` command's exit code for it (`usage` 2, `failure` 1, see cli/kit/exit-codes.ts); a
 *   `failure` that wraps a `cause` takes the cause's exit code.
 */
export interface ErrorCodeInfo {
  /** The class that carries it (a subclass of TtlstreamError). */
  className: string;
  retryable: boolean;
  exit: 'usage' | 'failure';
  /** One sentence for the operator: what happened and, where it helps, what to do. */
  meaning: string;
}

export const ERROR_CODES = {
  TTLSTREAM_ERROR: {
    className: 'TtlstreamError',
    retryable: false,
    exit: 'failure',
    meaning: 'The root of the tree; thrown as such only for a failure no subclass describes.',
  },
  TTLSTREAM_CONFIG: {
    className: 'ConfigError',
    retryable: false,
    exit: 'usage',
    meaning:
      'A setting is missing or wrong; the message names it (and its environment variable). Fatal at start-up.',
  },
  TTLSTREAM_VALIDATION: {
    className: 'ValidationError',
    retryable: false,
    exit: 'usage',
    meaning:
      'The caller asked for something invalid (a bad request body or parameter, a bad argument or option of a function); HTTP 400.',
  },
  TTLSTREAM_USAGE: {
    className: 'UsageError',
    retryable: false,
    exit: 'usage',
    meaning: 'A command line that parses but makes no sense (e.g. `--key` together with `--key-prefix`).',
  },
  TTLSTREAM_NOT_FOUND: {
    className: 'NotFoundError',
    retryable: false,
    exit: 'failure',
    meaning: 'The named resource (a table, its TTL settings) does not exist; HTTP 404.',
  },
  TTLSTREAM_CONFLICT: {
    className: 'ConflictError',
    retryable: false,
    exit: 'failure',
    meaning:
      'The request conflicts with the current state (e.g. a TTL change already in progress); HTTP 409.',
  },
  TTLSTREAM_RETRYABLE: {
    className: 'RetryableError',
    retryable: true,
    exit: 'failure',
    meaning:
      'A transient failure worth retrying (e.g. DynamoDB kept returning unprocessed items); the caller retries the whole step.',
  },
  TTLSTREAM_KAFKA_REQUEST_TIMEOUT: {
    className: 'KafkaRequestTimedOut',
    retryable: true,
    exit: 'failure',
    meaning:
      "A Kafka request got no answer within kafka.requestTimeoutMs; the producer's connections are replaced.",
  },
  TTLSTREAM_TIMEOUT: {
    className: 'TimedOutError',
    retryable: false,
    exit: 'failure',
    meaning:
      'A wait with a deadline gave up (a table not ACTIVE, a topic not yet known, a Kafka request while starting).',
  },
  TTLSTREAM_SERVICE: {
    className: 'ServiceError',
    retryable: false,
    exit: 'failure',
    meaning:
      'A service (DynamoDB, S3, Kafka, the local stack) could not be reached, refused the request, or is not what the configuration says it is.',
  },
  TTLSTREAM_LEASE_LOST: {
    className: 'LeaseLostError',
    retryable: false,
    exit: 'failure',
    meaning: 'A lease this process relied on was lost to another process; the work it guarded stops.',
  },
  TTLSTREAM_NOT_RUNNING: {
    className: 'NotRunningError',
    retryable: false,
    exit: 'failure',
    meaning:
      'A component was used before it started or after it stopped (usually a shutdown racing with work).',
  },
  TTLSTREAM_DATA: {
    className: 'DataError',
    retryable: false,
    exit: 'failure',
    meaning:
      'Data is not in the expected form: a control-table row, an archive file or manifest, a schema file, a metrics page, or a value that is not a DynamoDB attribute value, number or table name.',
  },
  TTLSTREAM_INTERNAL: {
    className: 'InternalError',
    retryable: false,
    exit: 'failure',
    meaning: 'An internal invariant does not hold: a bug in ttlstream; please report it with the log.',
  },
  TTLSTREAM_POISON_RECORD: {
    className: 'PoisonRecordError',
    retryable: false,
    exit: 'failure',
    meaning:
      'A stream message cannot become a valid record; its `reason` says which check failed. The archiver dead-letters it.',
  },
  TTLSTREAM_AVRO_SHAPE: {
    className: 'AvroShapeError',
    retryable: false,
    exit: 'failure',
    meaning: 'An Avro-shaped value is not a valid AttributeValue (zero or several tags set).',
  },
  TTLSTREAM_AVRO_WALK_BAIL: {
    className: 'Bail',
    retryable: false,
    exit: 'failure',
    meaning:
      'The fast Avro check cannot vouch for a message; caught inside the archiver, which then decodes it the general way.',
  },
  TTLSTREAM_ARCHIVE_LINEAGE: {
    className: 'ArchiveLineageError',
    retryable: false,
    exit: 'failure',
    meaning:
      "A partition's archived history is not the topic's (the topic was re-created under the same name); not archived until an operator acts.",
  },
  TTLSTREAM_ROLL_CANCELLED: {
    className: 'RollCancelledError',
    retryable: false,
    exit: 'failure',
    meaning:
      'An archive roll stopped between steps (partition revoked, archiver stopping); recovery redoes it.',
  },
  TTLSTREAM_ROLE_START: {
    className: 'RoleStartError',
    retryable: false,
    exit: 'failure',
    meaning: '`ttlstream run` could not start one of its roles; the cause says why (a bad setting exits 2).',
  },
  TTLSTREAM_DEMO_STAGE: {
    className: 'StageFailed',
    retryable: false,
    exit: 'failure',
    meaning: 'A stage of `ttlstream demo` failed; the message names the stage.',
  },
  TTLSTREAM_UNAUTHORIZED: {
    className: 'UnauthorizedError',
    retryable: false,
    exit: 'failure',
    meaning: 'The control plane refused a request without a valid bearer token; HTTP 401.',
  },
  TTLSTREAM_SIGV4: {
    className: 'SigV4Error',
    retryable: false,
    exit: 'failure',
    meaning:
      'The DynamoDB-compatible endpoint refused a request whose AWS Signature Version 4 is missing or wrong; `type` is the AWS exception name.',
  },
  TTLSTREAM_API_ANSWER: {
    className: 'TtlstreamApiError',
    retryable: false,
    exit: 'failure',
    meaning:
      "The control plane answered a call of the typed client (`ttlstream/client`) with an error; `apiCode` is the API's own code (`not-found`, `conflict`, ...), `status` the HTTP status. Retryable when the status is 503.",
  },
  TTLSTREAM_AWS_API: {
    className: 'AwsError',
    retryable: false,
    exit: 'failure',
    meaning:
      'The DynamoDB-compatible endpoint answers with this AWS error; `type` is the AWS exception name.',
  },
} as const satisfies Record<string, ErrorCodeInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;
