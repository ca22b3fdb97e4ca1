import { errorLabel } from '../../../core/metrics';

describe('errorLabel: why something failed, as a bounded label value', () => {
  it("takes an AWS SDK error's name, which is the service's error code", () => {
    const denied = Object.assign(new Error('Access Denied'), { name: 'AccessDenied' });
    expect(errorLabel(denied)).toBe('AccessDenied');
    expect(errorLabel(Object.assign(new Error('x'), { name: 'KMS.DisabledException' }))).toBe(
      'KMS.DisabledException',
    );
  });

  it("takes a system error's code (a file-system archive), not its generic name", () => {
    expect(errorLabel(Object.assign(new Error('EROFS: read-only file system'), { code: 'EROFS' }))).toBe(
      'EROFS',
    );
    expect(errorLabel(Object.assign(new Error('denied'), { code: 'EACCES' }))).toBe('EACCES');
    // A code that is not a system error's (kafkajs and the SDK use `code` too) leaves the name.
    expect(errorLabel(Object.assign(new TypeError('x'), { code: 'ERR_INVALID_ARG_TYPE' }))).toBe('TypeError');
  });

  it('names an answer without an error code by its HTTP status (the SDK calls it Unknown)', () => {
    const bare403 = Object.assign(new Error('UnknownError'), {
      name: 'Unknown',
      $metadata: { httpStatusCode: 403 },
    });
    expect(errorLabel(bare403)).toBe('http_403');
    expect(errorLabel(Object.assign(new Error('UnknownError'), { name: 'Unknown' }))).toBe('Unknown');
    // A known code keeps its name whatever the status.
    const denied = Object.assign(new Error('x'), {
      name: 'AccessDenied',
      $metadata: { httpStatusCode: 403 },
    });
    expect(errorLabel(denied)).toBe('AccessDenied');
  });

  it('keeps the vocabulary bounded: anything else is unknown or other', () => {
    expect(errorLabel('a string')).toBe('unknown');
    expect(errorLabel(undefined)).toBe('unknown');
    expect(errorLabel(Object.assign(new Error('x'), { name: 'name with spaces' }))).toBe('other');
    expect(errorLabel(Object.assign(new Error('x'), { name: 'A'.repeat(65) }))).toBe('other');
  });
});
