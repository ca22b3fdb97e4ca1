import { indexPathFor, openArchiveStorage, type Manifest } from '../../../archive/storage';
import { verifyArchive } from '../../../archive-tools/verify';
import { createTestTopic, testConfig, uniqueName } from '../../support/stack';
import { archiverEnv, crashed, untilCommitted } from '../../support/archiver-process';
import { useArchiverSuite } from '../../support/archiver-suite';
import { countIds, makeRecord, produceAll, readArchive, removeMessage } from '../../support/archive-fixture';

/**
 * Tamper evidence on a real archive, file system and S3: a SIGKILLed archiver's roll is redone by
 * the next process and the hash chain still verifies; then removing or altering what the archiver
 * wrote is caught.
 */

const BASE = Math.floor(Date.UTC(2024, 4, 1, 10, 0) / 1000);

describe('archive hash chain: crash recovery keeps it valid, tampering is caught', () => {
  const suite = useArchiverSuite();

  it.each([
    ['fs', 'archiver.after-data-files@2'],
    ['fs', 'archiver.after-manifest-complete@2'],
    ['s3', 'archiver.after-data-files@2'],
    ['s3', 'archiver.after-index-files@3'],
  ] as const)(
    '%s: SIGKILL at %s, the next archiver redoes the roll and the archive verifies',
    async (backend, crashAt) => {
      const name = uniqueName(`chain-${backend}`);
      const url = await suite.archive(backend, name);
      const topic = await createTestTopic(suite.admin(), `${name}.shared`, 2);
      const env = archiverEnv(name, topic, url, 16 * 1024);
      const records = Array.from({ length: 400 }, (_, i) =>
        makeRecord(i % 2 ? 'orders' : 'users', i, BASE + i * 30),
      );
      await produceAll(
        suite.producer(),
        topic,
        records.map((r, i) => removeMessage(r, i % 2 ? 'orders' : 'users')),
      );
      const armed = suite.spawn({ ...env, TTLSTREAM_CRASH_AT: crashAt });
      const outcome = await crashed(armed);
      expect(outcome.signal).toBe('SIGKILL');
      const storage = openArchiveStorage(testConfig({ archive: { url } }));
      const interrupted = await verifyArchive(storage);
      // Before recovery the interrupted roll is in progress (or complete, when killed after its manifest).
      expect(interrupted.findings).toEqual([]);

      const resumed = suite.spawn({ ...env, TTLSTREAM_ARCHIVE_ROLL_BYTES: String(24 * 1024) });
      expect(await untilCommitted(resumed, suite.admin(), `${name}-archiver`, topic)).toEqual({
        code: 0,
        signal: null,
      });

      const report = await verifyArchive(storage);
      expect(report.findings).toEqual([]);
      expect(report.inProgress).toEqual([]);
      expect(report.legacy).toBe(0);
      expect(report.rows).toBe(records.length);
      const ids = countIds((await readArchive(storage)).rows);
      expect(records.filter((r) => ids.get(r.eventID) !== 1)).toEqual([]);

      // Now tamper, as someone with write access to the archive might: truncate a file of one roll,
      // remove the key index of another of its files (or its own), drop a later roll's manifest, add a file.
      const chain: string[] = [];
      for await (const p of storage.list('_manifest/'))
        if (/\/0\/\d{20}-\d{20}\.json$/.test(p)) chain.push(p);
      expect(chain.length).toBeGreaterThanOrEqual(4);
      const a = JSON.parse(((await storage.get(chain[1] as string)) as Buffer).toString()) as Manifest;
      const file = a.files[0] as string;
      const body = (await storage.get(file)) as Buffer;
      await storage.put(file, body.subarray(0, body.length - 1));
      await storage.delete(indexPathFor(a.files[a.files.length - 1] as string));
      await storage.delete(chain[chain.length - 2] as string);
      await storage.put(file.replace(/\d{20}\.avro$/, '99999999999999999999.avro'), body);
      const found = (await verifyArchive(storage)).findings;
      expect([...new Set(found.map((f) => f.kind))].sort()).toEqual([
        'broken-link',
        'extra-file',
        'gap',
        'missing-index',
        'truncated-file',
      ]);
      expect(found.find((f) => f.kind === 'broken-link')?.path).toBe(chain[chain.length - 1]);
    },
  );
});
