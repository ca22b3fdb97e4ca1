import { projectionFor } from '../../../scanner/segment-worker';

describe('scan projection', () => {
  it('reads the key attributes and what the policy needs, each once, through placeholders', () => {
    const p = projectionFor(['pk', 'sk'], {
      policy: { mode: 'cosmos', defaultTtl: 100, ttlAttribute: 'ttl', lastWriteAttribute: '_ts' },
      legalHoldAttribute: 'hold',
    });
    expect(Object.values(p.names).sort()).toEqual(['_ts', 'hold', 'pk', 'sk', 'ttl']);
    expect(p.expression.split(', ').sort()).toEqual(Object.keys(p.names).sort());
  });

  it('handles attribute names that are reserved words or contain dots', () => {
    const p = projectionFor(['name'], { policy: { mode: 'dynamodb', attributeName: 'expires.at' } });
    expect(Object.values(p.names).sort()).toEqual(['expires.at', 'name']);
    expect(p.expression).not.toContain('.');
  });
});
