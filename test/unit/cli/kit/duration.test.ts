import { ValidationError } from '../../../../core/errors';
import {
  formatDuration,
  parseDuration,
  parseInstant,
  parseInstantOrEpoch,
} from '../../../../cli/kit/duration';

describe('parseDuration', () => {
  it.each([
    ['30s', 30_000],
    ['15m', 900_000],
    ['1h', 3_600_000],
    ['2d', 172_800_000],
    ['500ms', 500],
    ['1h30m', 5_400_000],
    ['1.5h', 5_400_000],
    [' 10s ', 10_000],
    ['0s', 0],
  ])('%s is %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', '30', 'abc', '1x', '1h 30m', '-5s', 's', '1hh', '10s5'])('refuses %j', (text) => {
    expect(() => parseDuration(text)).toThrow(ValidationError);
  });

  it('names the bad value and shows the accepted form', () => {
    expect(() => parseDuration('3 weeks')).toThrow(/"3 weeks".*30s, 15m, 1h, 2d/);
  });

  it('formats back to the compact form', () => {
    expect(formatDuration(30_000)).toBe('30s');
    expect(formatDuration(5_400_000)).toBe('1h30m');
    expect(formatDuration(250)).toBe('250ms');
    expect(parseDuration(formatDuration(93_784_000))).toBe(93_784_000);
  });
});

describe('parseInstant', () => {
  it('accepts ISO-8601 with zone and bare dates (UTC midnight)', () => {
    expect(parseInstant('2024-05-01T12:00:00Z', '--from')).toBe(Date.UTC(2024, 4, 1, 12));
    expect(parseInstant('2024-05-01T12:00:00.250+02:00', '--from')).toBe(Date.UTC(2024, 4, 1, 10, 0, 0, 250));
    expect(parseInstant('2024-05-01', '--to')).toBe(Date.UTC(2024, 4, 1));
    // No zone: UTC, whatever the machine's zone (the archive's hours are UTC).
    expect(parseInstant('2024-05-01T12:00', '--from')).toBe(Date.UTC(2024, 4, 1, 12));
    expect(parseInstant('2024-05-01 12:00:30.5', '--from')).toBe(Date.UTC(2024, 4, 1, 12, 0, 30, 500));
    expect(parseInstant('2026-11-30T00:00Z', '--from')).toBe(Date.UTC(2026, 10, 30));
  });

  it.each(['yesterday', '1714564800', '2024-13-01', '2024-05-01T25:00:00Z'])(
    'refuses %j naming the flag',
    (text) => {
      expect(() => parseInstant(text, '--from')).toThrow(/--from: expected an ISO-8601 time/);
    },
  );
});

describe('parseInstantOrEpoch', () => {
  it('takes whole epoch seconds and ISO-8601', () => {
    expect(parseInstantOrEpoch('1714564800', '--from')).toBe(1_714_564_800_000);
    expect(parseInstantOrEpoch('0', '--from')).toBe(0);
    expect(parseInstantOrEpoch('2024-05-01T12:00:00Z', '--from')).toBe(1_714_564_800_000);
  });
  it('refuses epoch milliseconds and anything else, naming the flag', () => {
    expect(() => parseInstantOrEpoch('1714564800000', '--to')).toThrow(/--to: .*epoch milliseconds/);
    expect(() => parseInstantOrEpoch('1714564800.5', '--to')).toThrow(/--to/);
    expect(() => parseInstantOrEpoch('yesterday', '--from')).toThrow(/--from/);
  });
});
