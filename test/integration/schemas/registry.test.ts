import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { KafkaMessage } from 'kafkajs';
import { REPLAY_HEADER, type RunningArchiver } from '../../../archiver';
import { openCatalog } from '../../../archive/catalog';
import { openArchiveStorage, type ArchiveStorage } from '../../../archive/storage';
import { silentLogger } from '../../../core/logger';
import { SchemaRegistryClient } from '../../../core/schema-registry';
import { HEADERS, decodeMessage, schemaRegistry } from '../../../schemas';
import { registeredTextOf } from '../../../schemas/subjects';
import { cli } from '../../support/cli';
import { consumersPython, registryUrl } from '../../support/ports';
import { createTestTopic, uniqueName } from '../../support/stack';
import { waitFor } from '../../support/wait-for';
import {
  Collector,
  createEnv,
  createTable,
  ensureStreamTopic,
  pipelineConfig,
  putItems,
  scanAll,
  startInProcess,
  type Env,
  type Item,
} from '../../support/pipeline-harness';
import { startArchiverFor } from '../../support/in-process-archiver';

const run = promisify(execFile);

/** A TCP forwarder to the registry that the test can cut: the registry itself stays up for the suites beside. */
async function cuttableLink(target: URL): Promise<{ url: string; cut(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${target.pathname}`,
    async cut() {
      const closed = new Promise<void>((done) => server.close(() => done()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}

/** Expired and live items; returns the keys of the expired ones. */
async function seed(env: Env, table: string, prefix: string, n: number): Promise<Set<string>> {
  const nowS = Math.floor(Date.now() / 1000);
  const items: Item[] = [];
  const expired = new Set<string>();
  for (let i = 0; i < n; i++) {
    const pk = `${prefix}-${i}`;
    const gone = i % 3 !== 0;
    items.push({ pk: { S: pk }, expiresAt: { N: String(gone ? nowS - 60 : nowS + 3600) } });
    if (gone) expired.add(pk);
  }
  await putItems(env.ddb, table, items);
  return expired;
}

async function waitDeleted(env: Env, table: string, keys: Set<string>): Promise<void> {
  await waitFor(
    `${keys.size} expired items of ${table} to be deleted`,
    async () => {
      const left = await scanAll(env.ddb, table);
      return [...keys].every((pk) => !left.has(pk));
    },
    30_000,
  );
}
const DECODER = resolve(__dirname, 'confluent_decode.py');

/** Every message of a topic, raw, read from the beginning until `count` have come. */
async function rawMessages(env: Env, topic: string, count: number): Promise<KafkaMessage[]> {
  const consumer = env.kafka.consumer({ groupId: uniqueName('raw') });
  const out: KafkaMessage[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => void out.push(message) });
    await waitFor(`${count} messages on ${topic}`, async () => out.length >= count, 30_000);
  } finally {
    await consumer.disconnect();
  }
  return out;
}

describe('the Confluent wire format with a real schema registry (Apicurio Registry, ccompat API)', () => {
  const url = registryUrl();

  it('registers every schema version in order under BACKWARD; the registry itself refuses an incompatible change', async () => {
    const topic = uniqueName('compat');
    const dry = await cli(
      [
        'schemas',
        'register',
        '--registry',
        url,
        '--topic',
        topic,
        '--compatibility',
        'BACKWARD',
        '--dry-run',
        '--json',
      ],
      { ...process.env, TTLSTREAM_LOG_LEVEL: 'error' },
    );
    expect(dry.stderr).toBe('');
    const planned = JSON.parse(dry.stdout) as {
      dryRun: boolean;
      subjects: Array<{ subject: string; id: number | null; result: string }>;
    };
    expect(planned.dryRun).toBe(true);
    expect(planned.subjects.map((s) => s.result)).toEqual(planned.subjects.map(() => 'would register'));
    const client = new SchemaRegistryClient({
      url,
      subjectNameStrategy: 'topic',
      autoRegister: true,
      requestTimeoutMs: 10_000,
    });
    // The dry run registered nothing.
    const latest = schemaRegistry().latest('stream-record');
    await expect(client.lookup(`${topic}-value`, registeredTextOf(latest))).resolves.toBeUndefined();

    const done = await cli(
      ['schemas', 'register', '--registry', url, '--topic', topic, '--compatibility', 'BACKWARD', '--json'],
      { ...process.env, TTLSTREAM_LOG_LEVEL: 'error' },
    );
    expect(done.code).toBe(0);
    const registered = JSON.parse(done.stdout) as {
      subjects: Array<{ subject: string; schema: string; id: number }>;
    };
    const versions = schemaRegistry().versions.filter((v) => v.name !== 'archived-record');
    expect(registered.subjects).toHaveLength(versions.length);
    expect(new Set(registered.subjects.map((s) => s.subject))).toEqual(
      new Set([`${topic}-value`, `${topic}-ttlstream.Retraction`]),
    );
    await expect(client.lookup(`${topic}-value`, registeredTextOf(latest))).resolves.toBe(
      registered.subjects.filter((s) => s.subject === `${topic}-value`).at(-1)?.id,
    );

    // A new required field without a default: old records cannot be read with it. BACKWARD must refuse it.
    const incompatible = JSON.parse(registeredTextOf(latest)) as { fields: unknown[] };
    incompatible.fields.push({ name: 'mandatoryNewField', type: 'string' });
    await expect(client.register(`${topic}-value`, JSON.stringify(incompatible))).rejects.toThrow(
      /incompatible schema \(409/,
    );
    // A compatible change (an optional field with a default) is accepted.
    const compatible = JSON.parse(registeredTextOf(latest)) as { fields: unknown[] };
    compatible.fields.push({ name: 'optionalNewField', type: ['null', 'string'], default: null });
    await expect(client.register(`${topic}-value`, JSON.stringify(compatible))).resolves.toEqual(
      expect.any(Number),
    );
  });

  describe('an end-to-end run publishing in the wire format', () => {
    let env: Env;
    let collector: Collector;
    let topic: string;
    const deleted = new Set<string>();

    beforeAll(async () => {
      env = await createEnv(pipelineConfig({ schemas: { registry: { url } } }));
      collector = new Collector(env.kafka);
      const table = await createTable(env, 'wire', {
        policy: { mode: 'dynamodb', attributeName: 'expiresAt' },
      });
      topic = await ensureStreamTopic(env);
      await collector.start(topic);
      for (const pk of await seed(env, table, 'item', 30)) deleted.add(pk);
      const pipeline = await startInProcess(env, ['scanner', 'producer']);
      try {
        await waitDeleted(env, table, deleted);
        await waitFor('their REMOVE records', async () => collector.removes.length >= deleted.size, 30_000);
      } finally {
        await pipeline.stop();
      }
    });
    afterAll(async () => {
      await collector?.stop();
      await env?.cleanup();
    });

    it("ttlstream's own reader decodes every record; each carries the prefix and the id header", async () => {
      expect(new Set(collector.removes.map((r) => r.dynamodb.Keys.pk?.S))).toEqual(deleted);
      const raw = await rawMessages(env, topic, collector.removes.length);
      for (const m of raw) {
        expect(m.value?.[0]).toBe(0);
        expect(String(m.headers?.[HEADERS.schemaId])).toBe(String(m.value?.readUInt32BE(1)));
      }
    });

    it('@kafkajs/confluent-schema-registry decodes every record knowing only the registry URL', async () => {
      const raw = await rawMessages(env, topic, collector.removes.length);
      const registry = new SchemaRegistry({ host: url });
      const decoded = (await Promise.all(raw.map((m) => registry.decode(m.value as Buffer)))) as Array<{
        eventID: string;
        eventName: string;
        userIdentity: { principalId: string };
      }>;
      expect(decoded.map((d) => d.eventName)).toEqual(raw.map(() => 'REMOVE'));
      expect(new Set(decoded.map((d) => d.eventID))).toEqual(
        new Set(collector.removes.map((r) => r.eventID)),
      );
      expect(new Set(decoded.map((d) => d.userIdentity.principalId))).toEqual(
        new Set(['dynamodb.amazonaws.com']),
      );
    });

    it("Python confluent-kafka's AvroDeserializer decodes every record knowing only the registry URL", async () => {
      const count = collector.removes.length;
      const { stdout } = await run(
        consumersPython(),
        [DECODER, env.config.kafka.brokers.join(','), url, topic, String(count), '60'],
        { timeout: 90_000 },
      );
      const lines = stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { eventID: string; eventName: string; principalId: string });
      expect(lines).toHaveLength(count);
      expect(new Set(lines.map((l) => l.eventID))).toEqual(new Set(collector.removes.map((r) => r.eventID)));
      expect(new Set(lines.map((l) => `${l.eventName} ${l.principalId}`))).toEqual(
        new Set(['REMOVE dynamodb.amazonaws.com']),
      );
    });
  });

  describe('replay writes what the producer writes', () => {
    let env: Env;
    let archiver: RunningArchiver;
    let storage: ArchiveStorage;
    let dir: string;
    let table: string;
    const deleted = new Set<string>();
    const started = Date.now();

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'wire-replay-'));
      const topics = { shared: uniqueName('wr'), partitions: 2 };
      env = await createEnv(
        pipelineConfig({
          topics: { ...topics, deadLetter: `${topics.shared}-dlq` },
          schemas: { registry: { url } },
          archive: { url: `file://${dir}`, groupId: uniqueName('wr-arch'), rollMs: 300 },
        }),
      );
      table = await createTable(env, 'wire-replay', {
        policy: { mode: 'dynamodb', attributeName: 'expiresAt' },
      });
      await ensureStreamTopic(env);
      storage = openArchiveStorage(env.config);
      archiver = await startArchiverFor(env.config, {
        kafka: env.kafka,
        storage,
        logger: silentLogger,
        tuning: { monitorIntervalMs: 500 },
      });
      for (const pk of await seed(env, table, 'r', 12)) deleted.add(pk);
      const pipeline = await startInProcess(env, ['scanner', 'producer']);
      try {
        await waitDeleted(env, table, deleted);
      } finally {
        await pipeline.stop();
      }
    });
    afterAll(async () => {
      await archiver?.stop();
      await env?.cleanup();
      rmSync(dir, { recursive: true, force: true });
    });

    it('the archiver archives the framed records; a registry deserializer reads the replayed ones', async () => {
      // The archiver reads the Confluent wire format off the stream topic (decision 0025): every deletion archived.
      await waitFor(
        `${deleted.size} archived records of ${table}`,
        async () => {
          const keys = new Set<string>();
          for await (const row of openCatalog(storage).scan(table)) keys.add(row.key);
          return keys.size >= deleted.size;
        },
        60_000,
      );
      const target = uniqueName('wr-replayed');
      const admin = env.kafka.admin();
      await admin.connect();
      try {
        await createTestTopic(admin, target, 2);
      } finally {
        await admin.disconnect();
      }
      const replayed = await cli(
        [
          'replay',
          '--table',
          table,
          '--from',
          new Date(started - 60_000).toISOString(),
          '--to',
          new Date(Date.now() + 60_000).toISOString(),
          '--topic',
          target,
          '--json',
        ],
        {
          ...process.env,
          TTLSTREAM_LOG_LEVEL: 'error',
          TTLSTREAM_ARCHIVE_URL: `file://${dir}`,
          TTLSTREAM_SCHEMAS_REGISTRY_URL: url,
        },
      );
      expect(replayed.stderr).toBe('');
      expect(JSON.parse(replayed.stdout)).toEqual({
        published: deleted.size,
        skippedRetracted: 0,
        format: 'avro, Confluent wire format',
      });

      const raw = await rawMessages(env, target, deleted.size);
      for (const m of raw) {
        expect(m.value?.[0]).toBe(0);
        expect(String(m.headers?.[HEADERS.schemaId])).toBe(String(m.value?.readUInt32BE(1)));
        expect(String(m.headers?.[REPLAY_HEADER])).toBe('1');
      }
      // Knowing only the registry URL, as Kafka Connect or a Python consumer would.
      const registry = new SchemaRegistry({ host: url });
      const decoded = (await Promise.all(raw.map((m) => registry.decode(m.value as Buffer)))) as Array<{
        eventID: string;
        eventName: string;
        dynamodb: { Keys: { pk: { S: string } } };
      }>;
      expect(new Set(decoded.map((d) => d.eventName))).toEqual(new Set(['REMOVE']));
      expect(new Set(decoded.map((d) => d.dynamodb.Keys.pk.S))).toEqual(deleted);
      // ttlstream's own readers too, from the header.
      for (const m of raw) expect(decodeMessage(m.value, m.headers ?? {}).kind).toBe('remove');
      // Registered under the target topic's subject, as the producer registers under the stream topic's.
      const client = new SchemaRegistryClient({
        url,
        subjectNameStrategy: 'topic',
        autoRegister: true,
        requestTimeoutMs: 10_000,
      });
      await expect(
        client.lookup(`${target}-value`, registeredTextOf(schemaRegistry().latest('stream-record'))),
      ).resolves.toBe(raw[0]?.value?.readUInt32BE(1));
    });
  });

  describe('start-up and outages', () => {
    let env: Env | undefined;
    afterEach(async () => {
      await env?.cleanup();
      env = undefined;
    });

    it('a registry that cannot be reached stops the start with the setting named', async () => {
      const link = await cuttableLink(new URL(url));
      await link.cut();
      env = await createEnv(
        pipelineConfig({ schemas: { registry: { url: link.url, requestTimeoutMs: 2000 } } }),
      );
      await createTable(env, 'down', { policy: { mode: 'dynamodb', attributeName: 'expiresAt' } });
      await expect(startInProcess(env, ['producer'])).rejects.toThrow(
        /schemas\.registry\.url \(TTLSTREAM_SCHEMAS_REGISTRY_URL\) http:\/\/127\.0\.0\.1:\d+\/.*registry up/,
      );
    });

    it('with autoRegister false, a schema not registered stops the start and says how to register it', async () => {
      env = await createEnv(pipelineConfig({ schemas: { registry: { url, autoRegister: false } } }));
      await createTable(env, 'unregistered', { policy: { mode: 'dynamodb', attributeName: 'expiresAt' } });
      await expect(startInProcess(env, ['producer'])).rejects.toThrow(
        /no stream-record v\d+ under subject .*-value, and schemas\.registry\.autoRegister .* is false: register it first \(ttlstream schemas register\)/,
      );
    });

    it('a registry that goes down after start-up does not stop publishing: the cached ids go on', async () => {
      const link = await cuttableLink(new URL(url));
      env = await createEnv(
        pipelineConfig({ schemas: { registry: { url: link.url, requestTimeoutMs: 2000 } } }),
      );
      const table = await createTable(env, 'outage', {
        policy: { mode: 'dynamodb', attributeName: 'expiresAt' },
      });
      const topic = await ensureStreamTopic(env);
      const collector = new Collector(env.kafka);
      await collector.start(topic);
      const pipeline = await startInProcess(env, ['scanner', 'producer']);
      try {
        const before = await seed(env, table, 'before', 9);
        await waitDeleted(env, table, before);
        await link.cut();
        const after = await seed(env, table, 'after', 9);
        await waitDeleted(env, table, after);
        await waitFor(
          'every REMOVE record',
          async () => collector.removes.length >= before.size + after.size,
          30_000,
        );
        const keys = new Set(collector.removes.map((r) => r.dynamodb.Keys.pk?.S));
        expect(keys).toEqual(new Set([...before, ...after]));
        const raw = await rawMessages(env, topic, collector.removes.length);
        expect(new Set(raw.map((m) => String(m.headers?.[HEADERS.schemaId])))).toHaveProperty('size', 1);
      } finally {
        await pipeline.stop();
        await collector.stop();
      }
    });
  });
});
