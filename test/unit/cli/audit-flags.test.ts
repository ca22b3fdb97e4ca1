import { cli } from '../../support/cli';

// Nothing listens here: a flag error must be reported before any request is sent.
const unreachable = {
  TTLSTREAM_DYNAMODB_ENDPOINT: 'http://127.0.0.1:1',
  TTLSTREAM_ARCHIVE_URL: 'file:///nonexistent',
};

const base = ['audit', '--table', 'orders', '--from', '2024-05-01', '--to', '2024-05-02'];

describe('ttlstream audit: flags', () => {
  it.each([
    [['--json', '--csv'], /--json contradicts --csv/],
    [['--csv', '--output', 'text'], /--csv contradicts --output text/],
    [['--json', '--output', 'csv'], /--json contradicts --output csv/],
    [['--output', 'yaml'], /yaml/],
    [['--sla', '60'], /invalid duration "60"/],
    [['--read-rate', '0'], /positive number/],
  ])('%j is a usage error (exit 2)', async (extra, message) => {
    const r = await cli([...base, ...extra], unreachable);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stdout).toBe('');
  });

  it('the window: --from before --to, ISO-8601 or epoch seconds, never epoch milliseconds', async () => {
    expect(
      (await cli(['audit', '--table', 't', '--from', '1714608000', '--to', '1714521600'], unreachable))
        .stderr,
    ).toMatch(/--from must be before --to/);
    const millis = await cli(
      ['audit', '--table', 't', '--from', '1714521600000', '--to', '1714608000'],
      unreachable,
    );
    expect(millis.code).toBe(2);
    expect(millis.stderr).toMatch(/--from: .*epoch milliseconds/);
    expect((await cli(['audit', '--table', 't', '--from', '2024-05-01'], unreachable)).code).toBe(2);
  });

  it('documents exit code 4 in its help', async () => {
    const r = await cli(['audit', '--help'], unreachable);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/exits 4 on a breach/);
  });
});
