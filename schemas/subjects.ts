import { readFileSync } from 'node:fs';
import { schemaRegistry, type SchemaName, type SchemaVersion } from './avro-registry';
import type { RecordKind } from './headers';

export type SubjectNameStrategy = 'topic' | 'record';

/** The schema families written to the stream topics, by record kind. */
export const STREAM_SCHEMA_OF: Record<RecordKind, SchemaName> = {
  remove: 'stream-record',
  retract: 'retraction',
};

/** The Avro full name of a schema version (namespace.name), e.g. `ttlstream.StreamRecord`. */
export function fullNameOf(version: SchemaVersion): string {
  const name = version.type.name;
  if (name === undefined) throw new Error(`${version.file} has no record name`);
  return name;
}

/**
 * The registry subject of a stream record kind on a topic (decision 0025).
 * - topic (TopicNameStrategy): the REMOVE schema is the topic's value schema, `<topic>-value`, which Kafka Connect,
 *   ksqlDB and Flink read. A retraction is a second record type on the topic; under `<topic>-value` it would fail the
 *   subject's compatibility check, so it goes under `<topic>-<full name>` (TopicRecordNameStrategy's name).
 *   Deserializers look schemas up by id, so both decode.
 * - record (RecordNameStrategy): the record's full name.
 */
export function subjectFor(strategy: SubjectNameStrategy, topic: string, kind: RecordKind): string {
  const fullName = fullNameOf(schemaRegistry().latest(STREAM_SCHEMA_OF[kind]));
  if (strategy === 'record') return fullName;
  return kind === 'remove' ? `${topic}-value` : `${topic}-${fullName}`;
}

const texts = new Map<string, string>();

/** The text registered for a schema version: its .avsc file as compact JSON (docs kept for readers). */
export function registeredTextOf(version: SchemaVersion): string {
  let text = texts.get(version.file);
  if (text === undefined) {
    text = JSON.stringify(JSON.parse(readFileSync(version.file, 'utf8')));
    texts.set(version.file, text);
  }
  return text;
}

export interface PlannedRegistration {
  subject: string;
  kind: RecordKind;
  schema: SchemaVersion;
  text: string;
}

/**
 * What `ttlstream schemas register` registers: for each topic and record kind, every version of its schema family,
 * oldest first, so the subject's history matches schemas/avro/ and each step passes the compatibility check.
 */
export function registrationPlan(
  topics: readonly string[],
  strategy: SubjectNameStrategy,
): PlannedRegistration[] {
  const seen = new Set<string>();
  const plan: PlannedRegistration[] = [];
  for (const topic of topics)
    for (const kind of ['remove', 'retract'] as const) {
      const subject = subjectFor(strategy, topic, kind);
      if (seen.has(subject)) continue; // record strategy: one subject for every topic
      seen.add(subject);
      for (const schema of schemaRegistry().versions.filter((v) => v.name === STREAM_SCHEMA_OF[kind]))
        plan.push({ subject, kind, schema, text: registeredTextOf(schema) });
    }
  return plan;
}
