import { BearerTokens, UnauthorizedError } from '../../../../../control/api/auth/bearer';

const A = 'token-aaaaaaaaaaaaaaaa';
const B = 'token-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb';

describe('BearerTokens', () => {
  const tokens = new BearerTokens([A, B]);

  it('matches each configured token and names it by position, never by value', () => {
    expect(tokens.match(A)).toBe('token#0');
    expect(tokens.match(B)).toBe('token#1');
    expect(tokens.authenticate(`Bearer ${B}`)).toBe('token#1');
    expect(tokens.authenticate(`bearer   ${A}  `)).toBe('token#0');
  });

  it('rejects near misses: prefixes, extensions, case changes, other lengths', () => {
    for (const wrong of [A.slice(0, -1), `${A}x`, A.toUpperCase(), '', 'x', B.replace(/b$/, 'c')]) {
      expect(tokens.match(wrong)).toBeUndefined();
    }
  });

  it.each([
    ['no header', undefined, 'missing Authorization header'],
    ['an empty header', '  ', 'missing Authorization header'],
    ['another scheme', `Basic ${A}`, 'malformed Authorization header'],
    ['two words', `Bearer ${A} extra`, 'malformed Authorization header'],
    ['a wrong token', 'Bearer not-a-configured-token', 'invalid bearer token'],
  ])('refuses %s with UnauthorizedError', (_name, header, message) => {
    expect(() => tokens.authenticate(header)).toThrow(UnauthorizedError);
    expect(() => tokens.authenticate(header)).toThrow(message);
  });

  it('fails closed when no tokens are configured', () => {
    const none = new BearerTokens([]);
    expect(none.configured).toBe(false);
    expect(() => none.authenticate(`Bearer ${A}`)).toThrow('no tokens are configured');
  });

  it('never puts the presented token in an error message', () => {
    const secretLooking = 'Bearer s3cr3t-presented-value-123456';
    try {
      tokens.authenticate(secretLooking);
      throw new Error('expected a rejection');
    } catch (err) {
      expect((err as Error).message).not.toContain('s3cr3t');
    }
  });
});
