import { ttlInstantOf } from '../../policy/window';
import {
  canonicalNumber,
  deletedBy,
  fromAvroMap,
  type AvroArchivedRecord,
  type AvroAttributeValue,
} from '../../schemas';
import { DataError } from '../../core/errors';
import type { TableTtlSettings } from '../../policy/settings';
import type { DataFileContext } from './types';

/**
 * The columns of a Parquet data file (docs/decisions/0031, docs/archive-columns.md): one row per
 * archive row, built from the row's Avro form. Pure. Columns are only ever added, never renamed,
 * retyped or removed; readers of older files see a new column as null.
 */

/** The columns every file has, in file order. `key_<attribute>` columns follow `key`. */
export const PARQUET_COLUMNS = [
  {
    name: 'event_id',
    type: 'STRING',
    nullable: false,
    doc: 'the REMOVE eventID; of a retraction, the eventID it retracts',
  },
  { name: 'event_name', type: 'STRING', nullable: false, doc: 'REMOVE or RETRACT' },
  { name: 'table_name', type: 'STRING', nullable: false, doc: 'the DynamoDB table' },
  {
    name: 'key',
    type: 'STRING',
    nullable: false,
    doc: 'the item key as canonical DynamoDB JSON (attributes sorted; B base64), as in the key index',
  },
  {
    name: 'deleted_at',
    type: 'TIMESTAMP',
    nullable: false,
    doc: 'UTC, ms: ApproximateCreationDateTime (whole seconds) of a REMOVE, retractedAt of a retraction',
  },
  {
    name: 'expired_at',
    type: 'TIMESTAMP',
    nullable: true,
    doc: "UTC, ms: the TTL instant the table's TTL settings give the image when written; null when unknown",
  },
  {
    name: 'ttl_mode',
    type: 'STRING',
    nullable: true,
    doc: 'dynamodb, cosmos or mongo: the policy expired_at comes from; null when unknown',
  },
  {
    name: 'user_identity_type',
    type: 'STRING',
    nullable: true,
    doc: 'userIdentity.type (Service); null for a retraction and for a REMOVE without the TTL identity',
  },
  {
    name: 'principal_id',
    type: 'STRING',
    nullable: true,
    doc: 'userIdentity.principalId (dynamodb.amazonaws.com); null for a retraction and for a REMOVE without the TTL identity',
  },
  { name: 'size_bytes', type: 'INT64', nullable: true, doc: "the record's SizeBytes; null for a retraction" },
  { name: 'topic', type: 'STRING', nullable: false, doc: 'Kafka topic' },
  { name: 'partition', type: 'INT32', nullable: false, doc: 'Kafka partition' },
  { name: 'offset', type: 'INT64', nullable: false, doc: 'Kafka offset' },
  {
    name: 'kafka_timestamp',
    type: 'TIMESTAMP',
    nullable: false,
    doc: 'UTC, ms: the Kafka message timestamp (publish time)',
  },
  {
    name: 'is_retraction',
    type: 'BOOLEAN',
    nullable: false,
    doc: 'true for a RETRACT: the deletion event_id never happened',
  },
  {
    name: 'retraction_reason',
    type: 'STRING',
    nullable: true,
    doc: 'why the deletion was retracted; null for a REMOVE',
  },
  {
    name: 'sequence_number',
    type: 'STRING',
    nullable: true,
    doc: "the record's SequenceNumber (decimal); null for a retraction",
  },
  { name: 'event_version', type: 'STRING', nullable: true, doc: 'eventVersion (1.1); null for a retraction' },
  {
    name: 'event_source',
    type: 'STRING',
    nullable: true,
    doc: 'eventSource (aws:dynamodb); null for a retraction',
  },
  { name: 'aws_region', type: 'STRING', nullable: true, doc: 'awsRegion; null for a retraction' },
  { name: 'event_source_arn', type: 'STRING', nullable: true, doc: 'eventSourceARN; null for a retraction' },
  { name: 'stream_view_type', type: 'STRING', nullable: true, doc: 'StreamViewType; null for a retraction' },
  {
    name: 'old_image',
    type: 'JSON',
    nullable: true,
    doc: 'the deleted item as DynamoDB JSON (lossless: N as written, B and BS base64, sets in order); null for a retraction',
  },
  {
    name: 'item',
    type: 'JSON',
    nullable: true,
    doc: 'the deleted item as plain JSON (N as a JSON number, B base64, sets as arrays) for json_extract; null for a retraction',
  },
  {
    name: 'deleted_by',
    type: 'STRING',
    nullable: true,
    doc: "who deleted the item: ttlstream (ttlstream's deleter), dynamodb (DynamoDB's own TTL, followed from the table's stream) or application (a REMOVE without the TTL identity); null for a retraction",
  },
] as const;

export type ColumnType =
  'STRING' | 'JSON' | 'TIMESTAMP' | 'INT64' | 'INT32' | 'BOOLEAN' | 'DOUBLE' | 'BYTE_ARRAY';
export type ColumnValue = string | number | bigint | boolean | Uint8Array | null;

export interface ColumnData {
  name: string;
  type: ColumnType;
  nullable: boolean;
  data: ColumnValue[];
}

/** A key attribute gets a typed column `key_<name>` when its name is a plain identifier. */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,120}$/;
const KEY_TYPES = { S: 'STRING', N: 'DOUBLE', B: 'BYTE_ARRAY' } as const;
type KeyTag = keyof typeof KEY_TYPES;

function keyTag(v: AvroAttributeValue): KeyTag | null {
  return v.S !== null ? 'S' : v.N !== null ? 'N' : v.B !== null ? 'B' : null;
}

function keysOf(row: AvroArchivedRecord): Record<string, AvroAttributeValue> {
  const keys = row.record?.dynamodb.Keys ?? row.retraction?.Keys;
  if (!keys) throw new DataError(`archive row ${row.eventID} without its body`);
  return keys;
}

/** `key_<name>` columns of a file: its first row's key attributes (a table's key schema is fixed). */
function keyColumns(rows: AvroArchivedRecord[]): Array<{ attribute: string; tag: KeyTag }> {
  const first = rows[0];
  if (!first) return [];
  const out: Array<{ attribute: string; tag: KeyTag }> = [];
  for (const [attribute, value] of Object.entries(keysOf(first))) {
    const tag = keyTag(value);
    if (tag && IDENTIFIER.test(attribute)) out.push({ attribute, tag });
  }
  return out.sort((a, b) => (a.attribute < b.attribute ? -1 : 1));
}

function keyValue(v: AvroAttributeValue | undefined, tag: KeyTag): ColumnValue {
  if (!v) return null;
  if (tag === 'S') return v.S;
  if (tag === 'N') return v.N === null ? null : Number(v.N);
  return v.B === null ? null : new Uint8Array(v.B.buffer, v.B.byteOffset, v.B.length);
}

/**
 * Canonical JSON of a key (S/N/B attributes), as the key index writes it (`canonicalJson` of the
 * key: names sorted by UTF-16 code unit, B as base64), written directly: it is a column of every
 * row (the unit tests compare the two).
 */
export function canonicalKeyOf(keys: Record<string, AvroAttributeValue>): string {
  const names = Object.keys(keys).sort();
  let out = '{';
  for (let i = 0; i < names.length; i++) {
    const name = names[i] as string;
    const v = keys[name] as AvroAttributeValue;
    const value =
      v.S !== null
        ? `{"S":${str(v.S)}}`
        : v.N !== null
          ? `{"N":${str(v.N)}}`
          : v.B !== null
            ? `{"B":${jsonBase64(v.B)}}`
            : '{}';
    out += `${i === 0 ? '' : ','}${str(name)}:${value}`;
  }
  return `${out}}`;
}

const str = JSON.stringify;
const jsonBase64 = (b: Buffer): string => `"${b.toString('base64')}"`;

/** One AttributeValue as DynamoDB JSON (the stream's JSON encoding), written directly. */
export function dynamoJson(v: AvroAttributeValue): string {
  if (v.S !== null) return `{"S":${str(v.S)}}`;
  if (v.N !== null) return `{"N":${str(v.N)}}`;
  if (v.B !== null) return `{"B":${jsonBase64(v.B)}}`;
  if (v.SS !== null) return `{"SS":${str(v.SS)}}`;
  if (v.NS !== null) return `{"NS":${str(v.NS)}}`;
  if (v.BS !== null) return `{"BS":[${v.BS.map(jsonBase64).join(',')}]}`;
  if (v.M !== null) return `{"M":${dynamoJsonMap(v.M)}}`;
  if (v.L !== null) return `{"L":[${v.L.map(dynamoJson).join(',')}]}`;
  if (v.NULL !== null) return '{"NULL":true}';
  if (v.BOOL !== null) return `{"BOOL":${v.BOOL}}`;
  throw new DataError('not an AttributeValue');
}

export function dynamoJsonMap(m: Record<string, AvroAttributeValue>): string {
  let out = '{';
  let first = true;
  for (const name of Object.keys(m)) {
    out += `${first ? '' : ','}${str(name)}:${dynamoJson(m[name] as AvroAttributeValue)}`;
    first = false;
  }
  return `${out}}`;
}

/** One AttributeValue as plain JSON: N as a JSON number of the same value (exact text), B base64. */
export function plainJson(v: AvroAttributeValue): string {
  if (v.S !== null) return str(v.S);
  if (v.N !== null) return canonicalNumber(v.N);
  if (v.B !== null) return jsonBase64(v.B);
  if (v.SS !== null) return str(v.SS);
  if (v.NS !== null) return `[${v.NS.map(canonicalNumber).join(',')}]`;
  if (v.BS !== null) return `[${v.BS.map(jsonBase64).join(',')}]`;
  if (v.M !== null) return plainJsonMap(v.M);
  if (v.L !== null) return `[${v.L.map(plainJson).join(',')}]`;
  if (v.NULL !== null) return 'null';
  if (v.BOOL !== null) return String(v.BOOL);
  throw new DataError('not an AttributeValue');
}

export function plainJsonMap(m: Record<string, AvroAttributeValue>): string {
  let out = '{';
  let first = true;
  for (const name of Object.keys(m)) {
    out += `${first ? '' : ','}${str(name)}:${plainJson(m[name] as AvroAttributeValue)}`;
    first = false;
  }
  return `${out}}`;
}

const utf8 = (s: string): Uint8Array => Buffer.from(s, 'utf8');

/** The top-level attributes a table's TTL settings read (its policy's and the legal hold's). */
export function ttlAttributes(settings: TableTtlSettings): string[] {
  const p = settings.policy;
  const names =
    p.mode === 'dynamodb'
      ? [p.attributeName]
      : p.mode === 'cosmos'
        ? [p.ttlAttribute, p.lastWriteAttribute]
        : [p.timeField];
  return settings.legalHoldAttribute === undefined ? names : [...names, settings.legalHoldAttribute];
}

function expiredAt(
  row: AvroArchivedRecord,
  deletedAtMs: number,
  context: DataFileContext,
  attributes: readonly string[],
): number | null {
  if (!context.ttl || !row.record) return null;
  // Only the attributes the policy reads are converted, not the whole image (a whole image per row doubled the
  // cost of this column).
  const image = row.record.dynamodb.OldImage;
  const read: Record<string, AvroAttributeValue> = {};
  for (const name of attributes) {
    const v = image[name];
    if (v !== undefined) read[name] = v;
  }
  return ttlInstantOf(context.ttl, fromAvroMap(read), deletedAtMs);
}

/** A row's two image columns, written already (parquet-walk.ts), as UTF-8. */
export interface ImageTexts {
  dynamo: Array<Uint8Array | null>;
  plain: Array<Uint8Array | null>;
}

/** The fixed columns' values of one row, in PARQUET_COLUMNS order. */
function fixedValues(
  row: AvroArchivedRecord,
  context: DataFileContext,
  attributes: readonly string[],
  images: { dynamo: Uint8Array | null; plain: Uint8Array | null } | null,
): ColumnValue[] {
  const r = row.record;
  const t = row.retraction;
  const deletedAtMs = r ? r.dynamodb.ApproximateCreationDateTime * 1000 : (t?.retractedAt ?? 0);
  return [
    row.eventID,
    r ? r.eventName : (t?.eventName ?? 'RETRACT'),
    row.table,
    canonicalKeyOf(keysOf(row)),
    deletedAtMs,
    expiredAt(row, deletedAtMs, context, attributes),
    context.ttl && r ? context.ttl.policy.mode : null,
    r && r.userIdentity.type !== '' ? r.userIdentity.type : null,
    r && r.userIdentity.principalId !== '' ? r.userIdentity.principalId : null,
    r ? BigInt(r.dynamodb.SizeBytes) : null,
    row.topic,
    row.partition,
    BigInt(row.offset),
    row.kafkaTimestamp,
    row.kind === 'retract',
    t ? t.reason : null,
    r ? r.dynamodb.SequenceNumber : null,
    r ? r.eventVersion : null,
    r ? r.eventSource : null,
    r ? r.awsRegion : null,
    r ? r.eventSourceARN : null,
    r ? r.dynamodb.StreamViewType : null,
    images ? images.dynamo : r ? utf8(dynamoJsonMap(r.dynamodb.OldImage)) : null,
    images ? images.plain : r ? utf8(plainJsonMap(r.dynamodb.OldImage)) : null,
    r ? deletedBy({ eventSourceARN: r.eventSourceARN, userIdentity: r.userIdentity }) : null,
  ];
}

/**
 * The columns of a file of these rows: the fixed ones, then `key_<attribute>` per key attribute.
 * With `images`, the rows' image columns are those texts (the rows' OldImage then needs only the
 * attributes the TTL settings read).
 */
export function parquetColumns(
  rows: AvroArchivedRecord[],
  context: DataFileContext,
  images?: ImageTexts,
): ColumnData[] {
  const fixed: ColumnData[] = PARQUET_COLUMNS.map((c) => ({
    name: c.name,
    type: c.type,
    nullable: c.nullable,
    data: new Array<ColumnValue>(rows.length),
  }));
  const keyed = keyColumns(rows).map((k) => ({
    ...k,
    column: {
      name: `key_${k.attribute}`,
      type: KEY_TYPES[k.tag],
      nullable: true,
      data: new Array<ColumnValue>(rows.length),
    } satisfies ColumnData,
  }));
  const attributes = context.ttl ? ttlAttributes(context.ttl) : [];
  rows.forEach((row, i) => {
    const texts = images ? { dynamo: images.dynamo[i] ?? null, plain: images.plain[i] ?? null } : null;
    const values = fixedValues(row, context, attributes, texts);
    for (let c = 0; c < fixed.length; c++) (fixed[c] as ColumnData).data[i] = values[c] ?? null;
    const keys = keysOf(row);
    for (const k of keyed) k.column.data[i] = keyValue(keys[k.attribute], k.tag);
  });
  const at = fixed.findIndex((c) => c.name === 'key') + 1;
  return [...fixed.slice(0, at), ...keyed.map((k) => k.column), ...fixed.slice(at)];
}
