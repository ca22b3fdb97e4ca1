import fc from 'fast-check';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ValidationError } from '../../../../core/errors';
import {
  FsArchiveStorage,
  MAX_SEGMENT_LENGTH,
  assertSafePath,
  decodeSegment,
  safeSegment,
} from '../../../../archive/storage';

const HOSTILE = [
  '..',
  '.',
  '../../etc',
  '../../../../../../etc/passwd',
  'a/b',
  'a\\b',
  '..\\..\\windows',
  '%2e%2e',
  '%2E%2E%2Fetc',
  'nul\0byte',
  '/abs',
  'C:\\x',
  'table=x/date=2020-01-01',
  'a+b-c=d~e',
  'ünïcödé-表-🙂',
  '\u202e\u200b',
  ' ',
  'x'.repeat(5000),
  '.'.repeat(300),
  '🙂'.repeat(200),
];

describe('safeSegment', () => {
  const label = (n: string): string =>
    n.length > 40 ? `${JSON.stringify(n.slice(0, 12))}… (${n.length} chars)` : JSON.stringify(n);
  it.each(HOSTILE.map((n) => [label(n), n]))('keeps %s inside one plain segment', (_label, name) => {
    const seg = safeSegment(name);
    expect(seg).toMatch(/^[A-Za-z0-9_%~-]+$/);
    expect(seg).not.toBe('.');
    expect(seg).not.toBe('..');
    expect(seg.length).toBeLessThanOrEqual(MAX_SEGMENT_LENGTH);
    expect(() => assertSafePath(`table=${seg}/x`)).not.toThrow();
  });

  it('encodes dots, separators, NUL and percent', () => {
    expect(safeSegment('..')).toBe('%2E%2E');
    expect(safeSegment('a/b')).toBe('a%2Fb');
    expect(safeSegment('a\\b')).toBe('a%5Cb');
    expect(safeSegment('a\0b')).toBe('a%00b');
    expect(safeSegment('%2e')).toBe('%252e');
    expect(safeSegment('Orders_2024-v1')).toBe('Orders_2024-v1');
    expect(safeSegment('ttlstream.remove')).toBe('ttlstream%2Eremove');
  });

  it('rejects the empty name', () => {
    expect(() => safeSegment('')).toThrow(ValidationError);
  });

  it('round-trips and stays injective for any string', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', minLength: 1, maxLength: 60 }),
        fc.string({ unit: 'binary', minLength: 1, maxLength: 60 }),
        (a, b) => {
          const sa = safeSegment(a);
          expect(sa).toMatch(/^[A-Za-z0-9_%-]+$/);
          if (Buffer.from(a, 'utf8').equals(Buffer.from(b, 'utf8'))) return;
          expect(safeSegment(b)).not.toBe(sa);
          // Lone surrogates are not representable in UTF-8; everything else decodes back.
          if (Buffer.from(a, 'utf8').toString('utf8') === a) expect(decodeSegment(sa)).toBe(a);
        },
      ),
    );
  });

  it('shortens very long names deterministically and keeps them apart', () => {
    const a = 'x'.repeat(1000) + 'a';
    const b = 'x'.repeat(1000) + 'b';
    expect(safeSegment(a)).toBe(safeSegment(a));
    expect(safeSegment(a)).not.toBe(safeSegment(b));
    expect(safeSegment(a)).toContain('~');
    expect(decodeSegment(safeSegment(a))).toBeNull();
    // A cut never splits a %XX escape.
    const s = safeSegment('é'.repeat(200));
    expect(s.split('~')[0]).toMatch(/^(%[0-9A-F]{2})+$/);
  });
});

describe('storage paths cannot escape the root', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ttlstream-safe-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it.each(['../x', 'a/../../x', '/etc/passwd', 'a//b', './a', 'a/.', 'a\\..\\b', 'a\0b', ''])(
    'refuses %j',
    async (path) => {
      const storage = new FsArchiveStorage(join(dir, 'root'));
      await expect(storage.put(path, Buffer.from('x'))).rejects.toThrow(ValidationError);
      await expect(storage.get(path)).rejects.toThrow(ValidationError);
      await expect(storage.delete(path)).rejects.toThrow(ValidationError);
    },
  );

  it('writes every hostile name under the root and nowhere else', async () => {
    const root = join(dir, 'root');
    const storage = new FsArchiveStorage(root);
    for (const name of HOSTILE) await storage.put(`table=${safeSegment(name)}/f`, Buffer.from(name));
    expect(readdirSync(dir)).toEqual(['root']);
    const listed: string[] = [];
    for await (const p of storage.list('')) listed.push(p);
    expect(listed).toHaveLength(new Set(HOSTILE).size);
    for (const p of listed) expect(resolve(root, p).startsWith(root + '/')).toBe(true);
    for (const name of HOSTILE)
      expect((await storage.get(`table=${safeSegment(name)}/f`))?.toString()).toBe(name);
  });
});
