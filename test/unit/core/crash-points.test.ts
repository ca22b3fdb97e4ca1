import { parseCrashPoints, parseCrashSpec } from '../../../core/crash-points';

describe('crash point specification', () => {
  it('parses points with and without a hit count', () => {
    expect([...parseCrashPoints('producer.after-publish, scanner.after-page@3')]).toEqual([
      ['producer.after-publish', 1],
      ['scanner.after-page', 3],
    ]);
  });

  it('ignores empty entries', () => {
    expect(parseCrashPoints('').size).toBe(0);
    expect(parseCrashPoints(' , ').size).toBe(0);
  });

  it('refuses malformed entries instead of silently never crashing', () => {
    expect(() => parseCrashPoints('producer.after-publish@')).toThrow(/bad entry/);
    expect(() => parseCrashPoints('Producer After')).toThrow(/bad entry/);
    expect(() => parseCrashPoints('producer.after-publish@0')).toThrow(/at least 1/);
  });

  it('parses the stop action', () => {
    expect([...parseCrashSpec('producer.after-published-state@2:stop,producer.after-witness')]).toEqual([
      ['producer.after-published-state', { at: 2, action: 'stop' }],
      ['producer.after-witness', { at: 1, action: 'kill' }],
    ]);
    expect(() => parseCrashSpec('producer.after-publish:pause')).toThrow(/bad entry/);
  });
});
