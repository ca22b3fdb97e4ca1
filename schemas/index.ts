/**
 * The stream record contract: what ttlstream publishes on its Kafka topics and archives. zod
 * schemas are the source of truth; Avro schemas (schemas/avro/*.avsc) are their wire form.
 * See docs/stream-contract.md.
 */
import { schemaRegistry } from './avro-registry';

export {
  AttributeValueSchema,
  AttributeMapSchema,
  KeySchema,
  ATTRIBUTE_TYPES,
  attributeValuesEqual,
  attributeMapsEqual,
  typeOf,
  type AttributeValue,
  type AttributeValueInput,
  type AttributeMap,
  type AttributeType,
} from './attribute-value';
export {
  StreamRecordSchema,
  StreamRecordDataSchema,
  RetractionSchema,
  RETRACTION_REASONS,
  TTL_USER_IDENTITY,
  TTLSTREAM_STREAM_LABEL,
  STREAM_ARN_PATTERN,
  deletedBy,
  type DeletedBy,
  streamArn,
  tableFromStreamArn,
  tableOf,
  isTtlDelete,
  type StreamRecord,
  type StreamRecordInput,
  type Retraction,
  type RetractionInput,
} from './record';
export {
  HEADERS,
  ENCODINGS,
  KINDS,
  type Encoding,
  type RecordKind,
  type MessageHeaders,
  type HeaderValue,
} from './headers';
export {
  canonicalJson,
  canonicalNumber,
  keyDigest,
  messageKeyDigest,
  messageKey,
  deriveEventId,
  formatSequenceNumber,
  TABLE_NAME_PATTERN,
} from './canonical';
export { PoisonRecordError, type PoisonReason } from './errors';
export { avroBodyOf, frameConfluent, CONFLUENT_PREFIX_BYTES } from './wire';
export {
  encodeRemove,
  encodeRetraction,
  inConfluentFormat,
  decodeMessage,
  headerString,
  type Decoded,
  type EncodedMessage,
} from './codec';
export {
  ArchivedRecordSchema,
  toArchived,
  toAvroArchived,
  archivedPrefix,
  fromAvroArchived,
  fromPlainArchived,
  createArchiveDecoder,
  createArchiveEncoder,
  type ArchivedPrefix,
  type ArchivedRecord,
  type AvroArchivedRecord,
  type KafkaCoordinates,
} from './archived';
export {
  toAvroAttributeValue,
  fromAvroAttributeValue,
  toAvroMap,
  fromAvroMap,
  toAvroStreamRecord,
  NO_IDENTITY,
  toAvroRetraction,
  AvroShapeError,
  emptyAttributeValue,
  type AvroAttributeValue,
  type AvroStreamRecord,
  type AvroRetraction,
} from './avro-shape';
export {
  toJsonAttributeValue,
  toJsonMap,
  toLambdaJson,
  toRetractionJson,
  type JsonAttributeValue,
} from './json-shape';
export {
  SCHEMA_NAMES,
  SchemaRegistry,
  schemaRegistry,
  loadSchemaVersions,
  parseAvroSchema,
  fingerprintOf,
  defaultSchemaDir,
  type SchemaName,
  type SchemaVersion,
} from './avro-registry';
export { checkCurrentAvro, type CheckedAvroMessage } from './avro-check';
export { checkCompatibility, type CompatibilityProblem } from './evolution';

const registry = schemaRegistry();
/** The current (newest) writer types; decoding also accepts every older version on disk. */
export const streamRecordType = registry.latest('stream-record').type;
export const retractionType = registry.latest('retraction').type;
export const archivedRecordType = registry.latest('archived-record').type;
/** Fingerprints (SHA-256 of the Parsing Canonical Form, hex) of the current writer schemas. */
export const SCHEMA_FINGERPRINTS = {
  streamRecord: registry.latest('stream-record').fingerprint,
  retraction: registry.latest('retraction').fingerprint,
  archivedRecord: registry.latest('archived-record').fingerprint,
} as const;
