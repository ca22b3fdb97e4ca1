import type { Logger } from '../core/logger';
import { SchemaRegistryClient, type RegistrySettings } from '../core/schema-registry';
import { envName } from '../core/config';
import { ConfigError, InternalError } from '../core/errors';
import { schemaRegistry } from './avro-registry';
import { inConfluentFormat, type EncodedMessage } from './codec';
import { HEADERS, KINDS, type RecordKind } from './headers';
import { STREAM_SCHEMA_OF, registeredTextOf, subjectFor } from './subjects';

/**
 * With schemas.registry set, what writes to a stream topic (the producer's publisher, `ttlstream replay`) writes Avro
 * in the Confluent wire format with these ids (decision 0025); unset, the bare body.
 */
export function streamSchemaIdsFor(
  registry: RegistrySettings | undefined,
  logger: Logger,
): StreamSchemaIds | undefined {
  return registry ? new StreamSchemaIds(new SchemaRegistryClient(registry), registry, logger) : undefined;
}

/**
 * The registry ids of the current stream schemas, per topic and kind. Resolved once per topic (registered, or
 * looked up with autoRegister off) and then cached for the life of the process: a registry that goes down later
 * does not stop publishing to the topics already resolved. A topic first seen while the registry is down fails its
 * batch, which is retried like any publish failure.
 */
export class StreamSchemaIds {
  private readonly ids = new Map<string, number>();

  constructor(
    private readonly client: SchemaRegistryClient,
    private readonly settings: Pick<RegistrySettings, 'subjectNameStrategy' | 'autoRegister'>,
    private readonly logger: Logger,
  ) {}

  /** Resolves the ids of every kind on these topics that are not cached yet. */
  async ensure(topics: readonly string[]): Promise<void> {
    for (const topic of new Set(topics)) {
      for (const kind of KINDS) {
        if (this.ids.has(keyOf(topic, kind))) continue;
        this.ids.set(keyOf(topic, kind), await this.resolve(topic, kind));
      }
    }
  }

  /** The id to frame a record with; the topic must have been ensured. */
  idFor(topic: string, kind: RecordKind): number {
    const id = this.ids.get(keyOf(topic, kind));
    if (id === undefined) throw new InternalError(`no schema id resolved for ${kind} records on ${topic}`);
    return id;
  }

  /** An encoded message as it goes to `topic`: Avro framed with its schema id; JSON, which has no frame, as it is. */
  onTheWire(topic: string, kind: RecordKind, message: EncodedMessage): EncodedMessage {
    if (message.headers[HEADERS.encoding] !== 'avro') return message;
    return inConfluentFormat(message, this.idFor(topic, kind));
  }

  private async resolve(topic: string, kind: RecordKind): Promise<number> {
    const subject = subjectFor(this.settings.subjectNameStrategy, topic, kind);
    const version = schemaRegistry().latest(STREAM_SCHEMA_OF[kind]);
    const text = registeredTextOf(version);
    if (this.settings.autoRegister) {
      const id = await this.client.register(subject, text);
      this.logger.info(
        { subject, schemaId: id, schema: `${version.name} v${version.version}` },
        'stream schema registered',
      );
      return id;
    }
    const id = await this.client.lookup(subject, text);
    if (id === undefined)
      throw new ConfigError(
        `schema registry ${this.client.url} has no ${version.name} v${version.version} under subject ${subject}, and schemas.registry.autoRegister (${envName(['schemas', 'registry', 'autoRegister'])}) is false: register it first (ttlstream schemas register)`,
      );
    return id;
  }
}

function keyOf(topic: string, kind: RecordKind): string {
  return `${kind}\u0000${topic}`;
}
