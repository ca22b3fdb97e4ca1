import type { Admin, Kafka, Producer } from 'kafkajs';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKafka } from '../../core/clients';
import type { TtlstreamConfig } from '../../core/config';
import { createTestArchive, testConfig } from './stack';
import { spawnArchiver, type ArchiverProcess } from './archiver-process';

// Jest hooks live here, not in test/support/archive-fixture.ts: the benchmarks import that and are built without
// Jest's types.

/** What every archiver suite sets up: a client, an admin, an idempotent producer, temporary archives. */
export interface ArchiverSuite {
  kafka: Kafka;
  admin: () => Admin;
  producer: () => Producer;
  /** A temporary directory, removed after the suite. */
  tempDir: () => string;
  /** The URL of a new, empty archive of test `name` on `backend` (a folder is removed after the suite). */
  archive: (backend: 'fs' | 's3', name: string) => Promise<string>;
  /** An archiver process (archiver-process.ts) that is SIGKILLed after the suite if it is still running. */
  spawn: (env: Record<string, string>) => ArchiverProcess;
  /**
   * Configuration for test `name`: its own topics, consumer group and (unless `archive.url` says
   * otherwise) a file archive in a temporary directory; small, quick rolls.
   */
  configFor: (
    name: string,
    options?: { partitions?: number; archive?: Partial<TtlstreamConfig['archive']> },
  ) => TtlstreamConfig;
}

/** Registers the suite's beforeAll/afterAll; call at the top of a describe block. */
export function useArchiverSuite(): ArchiverSuite {
  const kafka = createKafka(testConfig());
  let admin: Admin | undefined;
  let producer: Producer | undefined;
  const dirs: string[] = [];
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    admin = kafka.admin();
    producer = kafka.producer({ idempotent: true });
    await Promise.all([admin.connect(), producer.connect()]);
  });
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await Promise.all([admin?.disconnect(), producer?.disconnect()]);
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const tempDir = (): string => {
    const dir = mkdtempSync(join(tmpdir(), 'ttlstream-archive-'));
    dirs.push(dir);
    return dir;
  };
  const connected = <T>(client: T | undefined): T => {
    if (!client) throw new Error('the suite is not connected yet (use it inside tests)');
    return client;
  };
  return {
    kafka,
    admin: () => connected(admin),
    producer: () => connected(producer),
    tempDir,
    archive: (backend, name) => createTestArchive(backend, name, dirs),
    spawn: (env) => {
      const archiver = spawnArchiver(env);
      children.push(archiver.child);
      return archiver;
    },
    configFor: (name, options = {}) =>
      testConfig({
        topics: {
          shared: `${name}.shared`,
          perTablePrefix: `${name}.t.`,
          deadLetter: `${name}.dlq`,
          partitions: options.partitions ?? 1,
        },
        archive: {
          url: options.archive?.url ?? `file://${tempDir()}`,
          groupId: `${name}-archiver`,
          rollBytes: 32 * 1024,
          rollMs: 300,
          ...options.archive,
        },
      }),
  };
}
