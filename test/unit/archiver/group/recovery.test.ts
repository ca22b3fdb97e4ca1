import pino from 'pino';
import { ArchiveLineageError } from '../../../../archive/history';
import { Recovery, type RecoveryDeps } from '../../../../archiver/group/recovery';
import { newGroupState } from '../../../../archiver/group/state';
import type { Slot } from '../../../../archiver/group/state';
import { waitFor } from '../../../support/wait-for';

describe('partition recovery keeps trying while the partition is ours', () => {
  it('tries a non-retryable failure (a lineage mismatch) again, says so once a minute, and ends when the partition goes', async () => {
    let attempts = 0;
    const lines: Array<{ level: number; msg: string; err?: { code?: string } }> = [];
    const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
    const state = newGroupState();
    const deps = {
      log,
      state,
      offsets: {
        committed: () => {
          attempts++;
          return Promise.reject(new ArchiveLineageError('stream', 0, 30n, 10n));
        },
      },
    } as unknown as RecoveryDeps;
    const slot: Slot = {
      topic: 'stream',
      partition: 0,
      ready: Promise.resolve(null),
      worker: null,
      retired: false,
      gapStrikes: 0,
    };
    const recovering = new Recovery(deps).recoverWithRetry(slot, undefined);
    await waitFor('a third attempt', () => Promise.resolve(attempts >= 3));
    slot.retired = true;
    await expect(recovering).resolves.toBeNull();
    const loud = lines.filter((l) => l.level >= 50);
    expect(loud).toHaveLength(1);
    expect(loud[0]?.msg).toMatch(/^ARCHIVE LINEAGE/);
    expect(loud[0]?.err?.code).toBe('TTLSTREAM_ARCHIVE_LINEAGE');
  });
});
