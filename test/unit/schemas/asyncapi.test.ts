import { AvroSchemaParser } from '@asyncapi/avro-schema-parser';
import { Parser, type AsyncAPIDocumentInterface } from '@asyncapi/parser';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseConfig } from '../../../core/config';
import { DEAD_LETTER_RETENTION_MS } from '../../../core/topics';
import { encodeRemove, encodeRetraction, inConfluentFormat, SCHEMA_FINGERPRINTS } from '../../../schemas';
import { asyncApiDocumentText } from '../../../schemas/asyncapi';
import { loadSchemaVersions } from '../../../schemas/avro-registry';
import { writeSchemaExport } from '../../../schemas/export';
import { sampleRecord, sampleRetraction } from '../../support/stream-samples';

const DOCS = resolve(__dirname, '../../../docs/asyncapi.json');

/** @asyncapi/parser with Avro payload support: a payload that is not a valid Avro schema is an error too. */
async function parseAsyncApi(text: string, source: string): Promise<AsyncAPIDocumentInterface> {
  const parser = new Parser();
  parser.registerSchemaParser(AvroSchemaParser());
  const { document, diagnostics } = await parser.parse(text, { source });
  // Severity 0 is an error; 1 a warning. The one hint left says 3.1 exists: the issue asked for 3.0.
  expect(
    diagnostics.filter((d) => d.severity <= 1).map((d) => `${d.code}: ${d.message} at ${d.path.join('.')}`),
  ).toEqual([]);
  if (!document) throw new Error('no document');
  return document;
}

type JsonSchema = {
  properties: Record<string, { const?: string; enum?: string[]; pattern?: string }>;
  required: string[];
};

/** A real message's headers against a message's header schema, by the keywords it uses. */
function headersConform(schema: JsonSchema, headers: Record<string, string>): string[] {
  const problems: string[] = [];
  for (const name of schema.required) if (headers[name] === undefined) problems.push(`${name} missing`);
  for (const [name, value] of Object.entries(headers)) {
    const p = schema.properties[name];
    if (!p) problems.push(`${name} not described`);
    else if (p.const !== undefined && value !== p.const) problems.push(`${name}=${value} is not ${p.const}`);
    else if (p.enum !== undefined && !p.enum.includes(value))
      problems.push(`${name}=${value} not in its enum`);
    else if (p.pattern !== undefined && !new RegExp(p.pattern).test(value)) problems.push(`${name}=${value}`);
  }
  return problems;
}

describe('the AsyncAPI document of the stream topics', () => {
  let document: AsyncAPIDocumentInterface;
  beforeAll(async () => {
    document = await parseAsyncApi(readFileSync(DOCS, 'utf8'), DOCS);
  });

  it('docs/asyncapi.json is the generated document (run `npm run docs:contracts` if this fails)', () => {
    expect(readFileSync(DOCS, 'utf8')).toBe(asyncApiDocumentText());
  });

  it('is AsyncAPI 3.0 with the topics of the configuration and their Kafka settings', () => {
    const config = parseConfig({});
    expect(document.version()).toBe('3.0.0');
    const channels = Object.fromEntries(
      document
        .channels()
        .all()
        .map((c) => [c.id(), c]),
    );
    expect(channels.stream?.address()).toBe(config.topics.shared);
    expect(channels.streamPerTable?.address()).toBe(`${config.topics.perTablePrefix}{table}`);
    expect(channels.deadLetter?.address()).toBe(config.topics.deadLetter);
    expect(channels.stream?.bindings().get('kafka')?.value()).toMatchObject({
      partitions: config.topics.partitions,
      replicas: config.topics.replicationFactor,
      topicConfiguration: { 'cleanup.policy': ['delete'], 'retention.ms': config.topics.retentionMs },
    });
    expect(channels.deadLetter?.bindings().get('kafka')?.value()).toMatchObject({
      topicConfiguration: { 'retention.ms': DEAD_LETTER_RETENTION_MS },
    });
  });

  it('refers to the Avro schemas (resolved from schemas/avro/) and carries the JSON Schemas of the JSON encoding', () => {
    const messages = Object.fromEntries(
      document
        .messages()
        .all()
        .map((m) => [m.id(), m]),
    );
    expect(messages.removeAvro?.schemaFormat()).toMatch(/^application\/vnd\.apache\.avro/);
    // The Avro parser turned the referenced .avsc into a schema named by its full name.
    expect(messages.removeAvro?.payload()?.json()).toMatchObject({
      schema: { 'x-parser-schema-id': 'ttlstream.StreamRecord' },
    });
    expect(messages.retractAvroConfluent?.payload()?.json()).toMatchObject({
      schema: { 'x-parser-schema-id': 'ttlstream.Retraction' },
    });
    expect(messages.removeJson?.payload()?.json()).toMatchObject({
      required: expect.arrayContaining(['eventID', 'eventName', 'dynamodb']),
    });
    expect(messages.removeAvro?.bindings().get('kafka')?.value()).toMatchObject({ key: { type: 'string' } });
    expect(messages.removeAvroConfluent?.bindings().get('kafka')?.value()).toMatchObject({
      schemaIdLocation: 'payload',
      schemaIdPayloadEncoding: 'confluent',
    });
  });

  it("describes the headers of the messages the producer's encoders write", () => {
    const messages = Object.fromEntries(
      document
        .messages()
        .all()
        .map((m) => [m.id(), m]),
    );
    const headersOf = (id: string): JsonSchema => messages[id]?.headers()?.json() as JsonSchema;
    const record = sampleRecord();
    const cases: Array<[string, Record<string, string>]> = [
      ['removeAvro', encodeRemove(record, 'avro').headers],
      ['removeAvroConfluent', inConfluentFormat(encodeRemove(record, 'avro'), 7).headers],
      ['removeJson', encodeRemove(record, 'json').headers],
      ['retractAvro', encodeRetraction(sampleRetraction(record), 'avro').headers],
      ['retractJson', encodeRetraction(sampleRetraction(record), 'json').headers],
    ];
    for (const [id, headers] of cases) expect([id, headersConform(headersOf(id), headers)]).toEqual([id, []]);
    // Every fingerprint a reader knows is listed, and only those.
    const listed = [
      ...(headersOf('removeAvro').properties['ttlstream-schema-fingerprint']?.enum ?? []),
      ...(headersOf('retractAvro').properties['ttlstream-schema-fingerprint']?.enum ?? []),
    ];
    const versions = loadSchemaVersions().filter((v) => v.name !== 'archived-record');
    expect(listed.sort()).toEqual(versions.map((v) => v.type.fingerprint('sha256').toString('hex')).sort());
    expect(listed).toEqual(
      expect.arrayContaining([SCHEMA_FINGERPRINTS.streamRecord, SCHEMA_FINGERPRINTS.retraction]),
    );
  });

  it('`schemas export` writes it beside the .avsc files it refers to, and it parses from there', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'asyncapi-'));
    try {
      writeSchemaExport(dir);
      const exported = await parseAsyncApi(
        readFileSync(join(dir, 'asyncapi.json'), 'utf8'),
        join(dir, 'asyncapi.json'),
      );
      const remove = exported
        .messages()
        .all()
        .find((m) => m.id() === 'removeAvro');
      expect(remove?.payload()?.json()).toMatchObject({
        schema: { 'x-parser-schema-id': 'ttlstream.StreamRecord' },
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
