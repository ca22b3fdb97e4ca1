import { csvField, csvLine } from '../../../../cli/kit/csv';

describe('CSV (RFC 4180)', () => {
  it('leaves plain fields alone and writes null as empty', () => {
    expect(csvLine(['a', 1, null, undefined, 'x.avro', '2024-05-01T00:00:00.000Z'])).toBe(
      'a,1,,,x.avro,2024-05-01T00:00:00.000Z\r\n',
    );
  });

  it('quotes commas, quotes, CR, LF and edge spaces; doubles inner quotes; never alters the text', () => {
    expect(csvField('{"pk":{"S":"a,b"}}')).toBe('"{""pk"":{""S"":""a,b""}}"');
    expect(csvField('line\nbreak')).toBe('"line\nbreak"');
    expect(csvField('cr\r')).toBe('"cr\r"');
    expect(csvField(' lead')).toBe('" lead"');
    expect(csvField('trail ')).toBe('"trail "');
    expect(csvField('=SUM(A1)')).toBe('=SUM(A1)');
    expect(csvField('')).toBe('');
  });

  it('round-trips through a strict reader', () => {
    const values = ['a"b', 'c,d', 'e\r\nf', 'plain', ''];
    expect(parse(csvLine(values))).toEqual(values);
  });
});

/** A minimal RFC 4180 reader of one record, for the round trip. */
function parse(line: string): string[] {
  const out: string[] = [];
  let i = 0;
  for (;;) {
    let field = '';
    if (line[i] === '"') {
      i++;
      for (;;) {
        if (line[i] === '"' && line[i + 1] === '"') {
          field += '"';
          i += 2;
        } else if (line[i] === '"') {
          i++;
          break;
        } else field += line[i++];
      }
    } else while (line[i] !== ',' && line[i] !== '\r') field += line[i++];
    out.push(field);
    if (line[i] === ',') i++;
    else return out;
  }
}
