import { ValidationError } from '../../../core/errors';
import { DedupeWindow } from '../../../consumer/dedupe-window';

// The consumer helper's de-duplication window (consumer/), tested here with the rest of the contract.
describe('DedupeWindow', () => {
  it('remembers at most `capacity` ids, forgetting the least recently touched first', () => {
    const w = new DedupeWindow(3);
    for (const id of ['a', 'b', 'c']) w.touch(id);
    w.touch('a'); // a is now the most recent
    w.touch('d'); // evicts b
    expect(['a', 'b', 'c', 'd'].map((id) => w.has(id))).toEqual([true, false, true, true]);
    expect(w.size).toBe(3);
  });

  it('stays bounded under many ids', () => {
    const w = new DedupeWindow(100);
    for (let i = 0; i < 10_000; i++) w.touch(String(i));
    expect(w.size).toBe(100);
    expect(w.has('9999')).toBe(true);
    expect(w.has('9899')).toBe(false);
  });

  it('rejects a useless capacity', () => {
    expect(() => new DedupeWindow(0)).toThrow(ValidationError);
  });
});
