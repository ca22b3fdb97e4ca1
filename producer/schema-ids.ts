import type { Logger } from '../core/logger';
import type { RegistrySettings, SchemaRegistryClient } from '../core/schema-registry';
import { envName } from '../core/config';
import { ConfigError, InternalError } from '../core/errors';
import { KINDS, schemaRegistry, type RecordKind } from '../schemas';
import { STREAM_SCHEMA_OF, registeredTextOf, subjectFor } from '../schemas/subjects';

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
