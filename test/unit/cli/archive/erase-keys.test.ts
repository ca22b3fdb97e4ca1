import { ValidationError } from '../../../../core/errors';
import { parseKeysFileText, readEraseKeys } from '../../../../cli/archive/erase-keys';

describe('archive erase: the keys', () => {
  it('reads one key per line of a keys file, skipping blank lines and comments', () => {
    const text = '# subjects of DSR-7\n{"pk":{"S":"a"}}\n\n  {"pk":{"S":"b"},"sk":{"N":"1"}}  \n';
    expect(parseKeysFileText(text, 'f')).toEqual([{ pk: { S: 'a' } }, { pk: { S: 'b' }, sk: { N: '1' } }]);
  });

  it('names the line of a bad key, before anything is erased', () => {
    expect(() => parseKeysFileText('{"pk":{"S":"a"}}\n{"pk":"a"}\n', 'keys.jsonl')).toThrow(
      /--keys-file keys.jsonl line 2/,
    );
  });

  it('takes --key values (inline, file://, -) and the keys file together; none at all is a usage error', () => {
    const read = (source: string | number): string =>
      source === 0
        ? '{"pk":{"S":"stdin"}}'
        : source === 'k.json'
          ? '{"pk":{"S":"file"}}'
          : '{"pk":{"S":"x"}}\n';
    expect(readEraseKeys(['{"pk":{"S":"inline"}}', 'file://k.json', '-'], 'list.jsonl', read)).toEqual([
      { pk: { S: 'inline' } },
      { pk: { S: 'file' } },
      { pk: { S: 'stdin' } },
      { pk: { S: 'x' } },
    ]);
    expect(() => readEraseKeys([], undefined, read)).toThrow(ValidationError);
  });
});
