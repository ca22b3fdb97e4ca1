import { rowsToQuery } from '../../../producer/shard-worker';

describe('rowsToQuery (how many mark rows the next Query of a batch asks for)', () => {
  it('one row when nothing is known: a row may hold a whole batch', () => {
    expect(rowsToQuery(250, 0, 0, {})).toBe(1);
  });

  it("follows the shard's previous batches, then the rows of this batch", () => {
    expect(rowsToQuery(250, 0, 0, { marksPerRow: 16 })).toBe(16);
    expect(rowsToQuery(250, 0, 0, { marksPerRow: 250 })).toBe(1);
    // This batch's rows are small although the last batch's were large: ask for what is missing at this size.
    expect(rowsToQuery(250, 10, 1, { marksPerRow: 250 })).toBe(24);
  });

  it('at most 100 rows, at least one', () => {
    expect(rowsToQuery(1000, 0, 0, { marksPerRow: 1 })).toBe(100);
    expect(rowsToQuery(250, 300, 1, {})).toBe(1);
  });
});
