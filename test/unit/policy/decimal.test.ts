import {
  decimalToNumber,
  decimalToPlainText,
  millisToSecondsText,
  parseDecimal,
} from '../../../policy/decimal';

describe('decimal', () => {
  it('scales by powers of ten without rounding error', () => {
    // The naive product is not exact: 1.005 * 1000 = 1004.9999999999999.
    expect(Number('1.005') * 1000).not.toBe(1005);
    expect(decimalToNumber(parseDecimal('1.005')!, 3)).toBe(1005);
    expect(decimalToNumber(parseDecimal('1700000000.123')!, 3)).toBe(1_700_000_000_123);
    expect(decimalToNumber(parseDecimal('1.5')!, 3)).toBe(1500);
    expect(decimalToNumber(parseDecimal('-0.0')!, 3)).toBe(0);
    expect(decimalToNumber(parseDecimal('17e8')!, 3)).toBe(1.7e12);
  });

  it('writes plain decimal text', () => {
    expect(millisToSecondsText(1_735_689_600_123)).toBe('1735689600.123');
    expect(millisToSecondsText(1_735_689_600_000)).toBe('1735689600');
    expect(millisToSecondsText(1_735_689_600_100)).toBe('1735689600.1');
    expect(millisToSecondsText(5)).toBe('0.005');
    expect(millisToSecondsText(-1500)).toBe('-1.5');
    expect(millisToSecondsText(0)).toBe('0');
    expect(millisToSecondsText(0.5)).toBe('0.0005');
    expect(decimalToPlainText(parseDecimal('1.2e3')!)).toBe('1200');
  });

  it('accepts DynamoDB number text only', () => {
    for (const ok of ['1', '+1', '-1', '1.', '.5', '1e3', '1E-3', '007'])
      expect(parseDecimal(ok)).toBeDefined();
    for (const bad of ['', '.', 'e3', '1e', ' 1', '0x1', 'Infinity', '1_000', '1,5', '--1', 5, null]) {
      expect(parseDecimal(bad)).toBeUndefined();
    }
  });
});
