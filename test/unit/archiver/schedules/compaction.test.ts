import { startCompactSchedule } from '../../../../archiver/schedules/compaction';
import { parseDataFilePath } from '../../../../archive/storage';
import { silentLogger } from '../../../../core/logger';
import { metrics } from '../../../../core/metrics';
import { MemoryStorage } from '../../../support/archive-fixture';
import { HOUR, seedHours } from '../../../support/compaction';

const noSettings = { describe: async () => ({ settings: null }) };
const OPTIONS = {
  compactIntervalMs: 0,
  compactAfterMs: 2 * HOUR,
  compactTargetBytes: 1024 ** 2,
  compactMaxRows: 100_000,
  format: 'avro' as const,
  parquetZstdLevel: 3,
  avroDeflateLevel: 4,
  retentionDays: undefined,
};

describe("the archivers' compaction schedule", () => {
  it('has its counters from the start, at 0, so a first failure is an increase the alert sees', async () => {
    const options = { ...OPTIONS, compactIntervalMs: 3_600_000 };
    const schedule = startCompactSchedule(options, noSettings, new MemoryStorage(), silentLogger);
    try {
      const series = async (m: { get(): Promise<{ values: Array<{ labels: object; value: number }> }> }) =>
        (await m.get()).values.map((v) => ({ ...v.labels, value: v.value }));
      expect(await series(metrics.archiveCompactionErrors)).toEqual([{ sink: 'fs', value: 0 }]);
      expect(await series(metrics.archiveCompactedFiles)).toEqual([
        { sink: 'fs', side: 'in', value: 0 },
        { sink: 'fs', side: 'out', value: 0 },
      ]);
      expect(await series(metrics.archiveCompactedBytes)).toHaveLength(2);
    } finally {
      await schedule?.stop();
    }
  });

  it('compacts closed hours on its interval, and says how far behind it was and what it merged', async () => {
    const storage = new MemoryStorage();
    await seedHours(storage, { hours: 2, perHour: 6, perRoll: 3 });
    const filesIn = async (): Promise<number> =>
      (await metrics.archiveCompactedFiles.get()).values.find((v) => v.labels.side === 'in')?.value ?? 0;
    const inBefore = await filesIn();
    const options = { ...OPTIONS, compactIntervalMs: 20 };
    const schedule = startCompactSchedule(options, noSettings, storage, silentLogger);
    try {
      const compacted = (): boolean =>
        [...storage.objects.keys()].filter((k) => parseDataFilePath(k)?.compaction).length === 2;
      while (!compacted() || (await metrics.archiveCompactionLag.get()).values[0]?.value !== 0)
        await new Promise((r) => setTimeout(r, 20));
    } finally {
      await schedule?.stop();
    }
    expect((await filesIn()) - inBefore).toBe(8);
    expect(startCompactSchedule(OPTIONS, noSettings, storage, silentLogger)).toBeNull();
  });
});
