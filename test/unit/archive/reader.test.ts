import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkContainerFraming } from '../../../archive/format';
import { decodeArchiveFile, readArchiveFile, readRemoves } from '../../../archive/reader';
import { FsArchiveStorage } from '../../../archive/storage';
import { ValidationError } from '../../../core/errors';
import { removeRow, retractRow, writeRoll } from '../../support/archive-fixture';

let dir: string;
let storage: FsArchiveStorage;
const T = Math.floor(Date.UTC(2025, 5, 1, 8) / 1000);
const rows = Array.from({ length: 60 }, (_, i) =>
  removeRow({
    table: 'reader',
    keys: { pk: { S: `k${i}` } },
    image: { blob: { B: new Uint8Array(100).fill(i) } },
    deletedAtS: T + i,
  }),
);
const retraction = retractRow(rows[3]!, T * 1000 + 100_000);
let path: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ttlstream-reader-'));
  storage = new FsArchiveStorage(dir);
  [path] = (await writeRoll(storage, [...rows, retraction])) as [string];
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('archive reader', () => {
  it('reads every row back, equal to what was archived, in file order', async () => {
    const back = await readArchiveFile(storage, path);
    expect(back).toHaveLength(61);
    expect(back.slice(0, 60).map((r) => r.record)).toEqual(rows.map((r) => r.record));
    expect(back[60]).toMatchObject({
      kind: 'retract',
      eventID: rows[3]!.eventID,
      retraction: retraction.retraction,
    });
  });

  it('picks REMOVE rows by eventID, never the retraction that shares it', async () => {
    const wanted = [rows[3]!.eventID, rows[59]!.eventID, 'missing'];
    const found = await readRemoves(storage, path, wanted);
    expect([...found.keys()].sort()).toEqual([rows[3]!.eventID, rows[59]!.eventID].sort());
    expect(found.get(rows[3]!.eventID)?.kind).toBe('remove');
  });

  it('refuses a truncated file instead of returning fewer rows', async () => {
    const body = (await storage.get(path)) as Buffer;
    expect(checkContainerFraming(body, path).rows).toBe(61);
    expect(checkContainerFraming(body, path).blocks).toBeGreaterThan(2);
    for (const cut of [body.length - 1, body.length - 17, Math.floor(body.length / 2), 40, 3]) {
      await expect(decodeArchiveFile(body.subarray(0, cut), path)).rejects.toThrow(ValidationError);
    }
  });

  it('refuses trailing garbage and a flipped byte, naming the file', async () => {
    const body = (await storage.get(path)) as Buffer;
    await expect(decodeArchiveFile(Buffer.concat([body, Buffer.from([2, 2, 0])]), path)).rejects.toThrow(
      path,
    );
    const flipped = Buffer.from(body);
    const mid = Math.floor(body.length / 2);
    flipped[mid] = (flipped[mid] as number) ^ 0xff;
    await expect(decodeArchiveFile(flipped, path)).rejects.toThrow(ValidationError);
  });

  it('says which data file is missing', async () => {
    await expect(readArchiveFile(storage, 'table=x/none.avro')).rejects.toThrow(
      /table=x\/none.avro.*missing/,
    );
  });
});
