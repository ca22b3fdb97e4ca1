import { headBucketVerdict } from '../../../../cli/kit/archive-root';

describe('headBucketVerdict: what a failed HeadBucket says about the archive bucket', () => {
  it('404 (NotFound, or NoSuchBucket from some servers) is a missing bucket', () => {
    expect(headBucketVerdict({ name: 'NotFound', $metadata: { httpStatusCode: 404 } })).toBe('missing');
    expect(headBucketVerdict({ name: 'NoSuchBucket' })).toBe('missing');
    expect(headBucketVerdict({ name: 'Unknown', $metadata: { httpStatusCode: 404 } })).toBe('missing');
  });

  it('403 is a refusal, not a missing bucket', () => {
    expect(headBucketVerdict({ name: 'Forbidden', $metadata: { httpStatusCode: 403 } })).toBe('forbidden');
    expect(headBucketVerdict({ name: 'Unknown', $metadata: { httpStatusCode: 403 } })).toBe('forbidden');
  });

  it('a connection failure or a server error is neither', () => {
    expect(
      headBucketVerdict(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })),
    ).toBe('other');
    expect(headBucketVerdict({ name: 'InternalError', $metadata: { httpStatusCode: 500 } })).toBe('other');
    expect(headBucketVerdict(null)).toBe('other');
  });
});
