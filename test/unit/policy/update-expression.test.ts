import { addSetAssignment, topLevelAttributes } from '../../../policy/update-expression';

describe('addSetAssignment', () => {
  it.each([
    [undefined, 'SET #s = :s'],
    ['', 'SET #s = :s'],
    ['SET a = :a', 'SET #s = :s, a = :a'],
    ['set a = :a, b = :b', 'set #s = :s, a = :a, b = :b'],
    ['REMOVE a', 'REMOVE a SET #s = :s'],
    ['ADD n :one DELETE s :x', 'ADD n :one DELETE s :x SET #s = :s'],
    ['REMOVE a SET b = :b', 'REMOVE a SET #s = :s, b = :b'],
    ['SET l = list_append(l, :v) REMOVE x', 'SET #s = :s, l = list_append(l, :v) REMOVE x'],
    ['REMOVE #set SET #x = :set', 'REMOVE #set SET #s = :s, #x = :set'],
    ['  SET\ta = :a  ', 'SET #s = :s,\ta = :a'],
  ])('%j → %j', (expression, expected) => {
    expect(addSetAssignment(expression, '#s = :s')).toBe(expected);
  });
});

describe('topLevelAttributes', () => {
  it('finds the attributes that start paths, resolving placeholders', () => {
    expect(
      topLevelAttributes('SET a.b[0] = :v, #n.#m = if_not_exists(c, :z) REMOVE d[1], #e ADD f :one', {
        '#n': 'name',
        '#m': 'nested',
        '#e': '_ts',
      }),
    ).toEqual(['a', 'name', 'c', 'd', '_ts', 'f']);
    expect(topLevelAttributes('SET a = list_append(b, :v)', {})).toEqual(['a', 'b']);
    expect(topLevelAttributes('SET x.#ts = :v', { '#ts': '_ts' })).toEqual(['x']);
  });
});
