import { basename } from 'node:path';
import { parseConfig } from '../core/config';
import { declaredTopics, type TopicSpec } from '../core/topics';
import { VERSION } from '../core/version';
import { loadSchemaVersions, type SchemaVersion } from './avro-registry';
import { TABLE_NAME_PATTERN } from './canonical';
import { POISON_REASONS } from './errors';
import { jsonSchemaFor } from './json-schema';
import { DLQ_HEADERS, HEADERS, REPLAY_HEADER, type Encoding, type RecordKind } from './headers';
import { STREAM_SCHEMA_OF, fullNameOf } from './subjects';

/**
 * The AsyncAPI 3.0 document of the stream topics, made from what the producer and the archiver themselves use: the
 * topic names and settings of the default configuration (core/topics.ts declaredTopics), the header names
 * (headers.ts), the Avro schema files and their fingerprints (avro-registry.ts), the JSON encoding's JSON Schemas
 * (export.ts, from the zod schemas), the registry subjects (subjects.ts) and the poison reasons (errors.ts).
 * `ttlstream schemas export` writes it beside the .avsc files it refers to; docs/asyncapi.json is the copy for the
 * repository, referring to schemas/avro/.
 */

type Json = Record<string, unknown>;

const KAFKA_BINDING_VERSION = '0.5.0';
const AVRO_SCHEMA_FORMAT = 'application/vnd.apache.avro;version=1.9.0';

const DESCRIPTION = [
  'Every TTL deletion ttlstream makes is announced on Kafka as a DynamoDB Streams `REMOVE` record tagged as a TTL',
  'delete (`userIdentity: {type: "Service", principalId: "dynamodb.amazonaws.com"}`), and withdrawn by a `RETRACT`',
  'message when the deletion did not happen. This document describes the topics of the default configuration',
  '(`topics.*`): names and settings follow that configuration in a deployment. The rules a consumer must follow',
  '(de-duplication by eventID, retractions, ordering, schema evolution) are in docs/stream-contract.md.',
  '',
  'Encodings (`topics.encoding`): Avro binary (default), or Lambda-compatible JSON. With `schemas.registry.url` set,',
  'Avro values are in the Confluent wire format (magic byte 0, 4-byte schema id, body) and carry',
  '`ttlstream-schema-id`; without, the bare Avro body, its writer schema named by `ttlstream-schema-fingerprint`.',
].join('\n');

const KEY_SCHEMA = {
  type: 'string',
  description:
    '`<table>/<canonical JSON of the item\'s primary key>` (UTF-8), e.g. `orders/{"pk":{"S":"order#1001"}}`: ' +
    'attribute names sorted, binaries in base64, numbers in one spelling, so every record of one item has the same ' +
    "key bytes and lands in one partition (Kafka's default murmur2 partitioner).",
  pattern: `^[a-zA-Z0-9_.-]{3,255}/\\{.*\\}$`,
};

/** The Kafka channel binding of a topic as core/topics.ts declares it. */
function channelBinding(spec: TopicSpec, topicName?: string): Json {
  const config = Object.fromEntries(spec.configEntries.map((e) => [e.name, e.value]));
  return {
    kafka: {
      ...(topicName !== undefined ? { topic: topicName } : {}),
      partitions: spec.numPartitions,
      replicas: spec.replicationFactor,
      topicConfiguration: {
        'cleanup.policy': (config['cleanup.policy'] ?? 'delete').split(','),
        'retention.ms': Number(config['retention.ms']),
        'min.insync.replicas': Number(config['min.insync.replicas']),
      },
      bindingVersion: KAFKA_BINDING_VERSION,
    },
  };
}

function versionsOf(kind: RecordKind, versions: SchemaVersion[]): SchemaVersion[] {
  return versions.filter((v) => v.name === STREAM_SCHEMA_OF[kind]);
}

/** The headers of a stream message of one kind and encoding (`framed`: the Confluent wire format). */
function streamHeaders(
  kind: RecordKind,
  encoding: Encoding,
  framed: boolean,
  versions: SchemaVersion[],
): Json {
  const properties: Json = {
    [HEADERS.kind]: { type: 'string', const: kind },
    [HEADERS.encoding]: { type: 'string', const: encoding },
    [HEADERS.table]: {
      type: 'string',
      pattern: TABLE_NAME_PATTERN.source,
      description: 'The DynamoDB table; in the shared topic, what tells tables apart.',
    },
    [HEADERS.eventId]: {
      type: 'string',
      description:
        kind === 'remove'
          ? "The record's eventID (de-duplicate by it)."
          : 'The eventID this message retracts.',
    },
    [REPLAY_HEADER]: {
      type: 'string',
      const: '1',
      description: 'Set on records `ttlstream replay` re-published from the archive.',
    },
  };
  const required: string[] = [HEADERS.kind, HEADERS.encoding, HEADERS.table, HEADERS.eventId];
  if (encoding === 'avro') {
    properties[HEADERS.fingerprint] = {
      type: 'string',
      enum: versionsOf(kind, versions).map((v) => v.type.fingerprint('sha256').toString('hex')),
      description:
        "SHA-256 (hex) of the writer schema's Parsing Canonical Form; one value per schema version " +
        `(${versionsOf(kind, versions)
          .map((v) => basename(v.file))
          .join(', ')}).`,
    };
    required.push(HEADERS.fingerprint);
  }
  if (framed) {
    properties[HEADERS.schemaId] = {
      type: 'string',
      pattern: '^[0-9]{1,10}$',
      description: "The writer schema's registry id, as in the value's 5-byte prefix.",
    };
    required.push(HEADERS.schemaId);
  }
  return { type: 'object', properties, required };
}

function streamMessage(
  kind: RecordKind,
  encoding: Encoding,
  framed: boolean,
  versions: SchemaVersion[],
  avroDir: string,
): Json {
  const latest = versionsOf(kind, versions).at(-1);
  if (!latest) throw new Error(`no Avro schema of ${kind} records`);
  const what = kind === 'remove' ? 'A TTL deletion: a DynamoDB Streams REMOVE record' : 'A retraction';
  const form = encoding === 'json' ? 'JSON' : framed ? 'Avro, Confluent wire format' : 'Avro';
  const strategy = kind === 'remove' ? 'TopicNameStrategy' : 'TopicRecordNameStrategy';
  return {
    name: `${kind}-${encoding}${framed ? '-confluent' : ''}`,
    title: `${kind === 'remove' ? 'REMOVE' : 'RETRACT'} (${form})`,
    summary: what,
    contentType: encoding === 'json' ? 'application/json' : 'avro/binary',
    headers: streamHeaders(kind, encoding, framed, versions),
    payload:
      encoding === 'json'
        ? { $ref: `#/components/schemas/${kind === 'remove' ? 'StreamRecordJson' : 'RetractionJson'}` }
        : { schemaFormat: AVRO_SCHEMA_FORMAT, schema: { $ref: `${avroDir}${basename(latest.file)}` } },
    bindings: {
      kafka: {
        key: KEY_SCHEMA,
        ...(framed
          ? {
              schemaIdLocation: 'payload',
              schemaIdPayloadEncoding: 'confluent',
              schemaLookupStrategy: strategy,
            }
          : {}),
        bindingVersion: KAFKA_BINDING_VERSION,
      },
    },
    ...(framed
      ? {
          description:
            `Registered as ${fullNameOf(latest)} under the subject \`<topic>-${kind === 'remove' ? 'value' : fullNameOf(latest)}\` ` +
            `(schemas.registry.subjectNameStrategy: topic; with \`record\`, under \`${fullNameOf(latest)}\`).`,
        }
      : {}),
  };
}

/** The JSON encoding's JSON Schemas with their shared definitions lifted into components. */
function jsonSchemas(): Json {
  const lift = (kind: 'remove' | 'retract'): { schema: Json; defs: Json } => {
    const { $schema: _draft, $defs, ...schema } = jsonSchemaFor(kind);
    const text = JSON.stringify(schema).replaceAll('"#/$defs/', '"#/components/schemas/');
    return { schema: JSON.parse(text) as Json, defs: ($defs ?? {}) as Json };
  };
  const remove = lift('remove');
  const retract = lift('retract');
  const defs = JSON.parse(
    JSON.stringify({ ...remove.defs, ...retract.defs }).replaceAll('"#/$defs/', '"#/components/schemas/'),
  ) as Json;
  return { StreamRecordJson: remove.schema, RetractionJson: retract.schema, ...defs };
}

const STREAM_MESSAGES: Array<[string, RecordKind, Encoding, boolean]> = [
  ['removeAvro', 'remove', 'avro', false],
  ['removeAvroConfluent', 'remove', 'avro', true],
  ['removeJson', 'remove', 'json', false],
  ['retractAvro', 'retract', 'avro', false],
  ['retractAvroConfluent', 'retract', 'avro', true],
  ['retractJson', 'retract', 'json', false],
];

function deadLetterMessage(): Json {
  return {
    name: 'dead-letter',
    title: 'A poison message, set aside',
    summary:
      'A message on a stream topic that did not decode to a valid record, as it was, plus where and why.',
    contentType: 'application/octet-stream',
    headers: {
      type: 'object',
      description: "The original message's headers, plus these.",
      properties: {
        [DLQ_HEADERS.reason]: { type: 'string', enum: [...POISON_REASONS] },
        [DLQ_HEADERS.topic]: { type: 'string', description: 'The topic it came from.' },
        [DLQ_HEADERS.partition]: { type: 'string', pattern: '^[0-9]+$' },
        [DLQ_HEADERS.offset]: { type: 'string', pattern: '^[0-9]+$' },
      },
      required: Object.values(DLQ_HEADERS),
    },
    payload: { description: 'The original value, byte for byte (possibly empty or not a record at all).' },
    bindings: {
      kafka: {
        key: { type: 'string', description: 'The original key, byte for byte.' },
        bindingVersion: KAFKA_BINDING_VERSION,
      },
    },
  };
}

/**
 * The document. `avroDir` is prepended to each .avsc file name in the Avro payloads' `$ref`: '' where the files lie
 * beside the document (`schemas export`), `../schemas/avro/` for docs/asyncapi.json.
 */
export function asyncApiDocument(options: { avroDir: string }): Json {
  const config = parseConfig({});
  const versions = loadSchemaVersions();
  const [stream, deadLetter] = declaredTopics(config);
  if (!stream || !deadLetter) throw new Error('core/topics.ts declares a stream and a dead-letter topic');
  const messages = Object.fromEntries(
    STREAM_MESSAGES.map(([id, kind, encoding, framed]) => [
      id,
      streamMessage(kind, encoding, framed, versions, options.avroDir),
    ]),
  );
  const channelMessages = (): Json =>
    Object.fromEntries(STREAM_MESSAGES.map(([id]) => [id, { $ref: `#/components/messages/${id}` }]));
  const operationMessages = (channel: string): Json[] =>
    STREAM_MESSAGES.map(([id]) => ({ $ref: `#/channels/${channel}/messages/${id}` }));
  return {
    asyncapi: '3.0.0',
    info: {
      title: 'ttlstream stream topics',
      version: VERSION,
      description: DESCRIPTION,
      license: { name: 'Apache-2.0' },
    },
    defaultContentType: 'avro/binary',
    channels: {
      stream: {
        address: stream.topic,
        title: 'The shared stream topic',
        description: `Every table's REMOVE and RETRACT messages (topics.naming: shared, topics.shared).`,
        messages: channelMessages(),
        bindings: channelBinding(stream),
      },
      streamPerTable: {
        address: `${config.topics.perTablePrefix}{table}`,
        title: 'One stream topic per table',
        description:
          'The same messages, one topic per table (topics.naming: per-table, topics.perTablePrefix).',
        parameters: { table: { description: 'The DynamoDB table name.' } },
        messages: channelMessages(),
        bindings: channelBinding(stream),
      },
      deadLetter: {
        address: deadLetter.topic,
        title: 'The dead-letter topic',
        description: 'Messages of the stream topics the archiver could not decode (topics.deadLetter).',
        messages: { deadLetter: { $ref: '#/components/messages/deadLetter' } },
        bindings: channelBinding(deadLetter),
      },
    },
    operations: {
      announceDeletions: {
        action: 'send',
        channel: { $ref: '#/channels/stream' },
        summary:
          'The producer announces each TTL deletion before it deletes, and retracts one that did not happen.',
        messages: operationMessages('stream'),
      },
      announceDeletionsPerTable: {
        action: 'send',
        channel: { $ref: '#/channels/streamPerTable' },
        summary: 'The same, with one topic per table.',
        messages: operationMessages('streamPerTable'),
      },
      setAsidePoison: {
        action: 'send',
        channel: { $ref: '#/channels/deadLetter' },
        summary: 'The archiver copies each poison message here and goes on with the partition.',
        messages: [{ $ref: '#/channels/deadLetter/messages/deadLetter' }],
      },
    },
    components: {
      messages: { ...messages, deadLetter: deadLetterMessage() },
      schemas: jsonSchemas(),
    },
  };
}

export function asyncApiDocumentText(options: { avroDir: string } = { avroDir: '../schemas/avro/' }): string {
  return JSON.stringify(asyncApiDocument(options), null, 2) + '\n';
}
