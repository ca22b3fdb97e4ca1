import { ValidationError } from '../../../core/errors';
import { DLQ_HEADERS, REPLAY_HEADER, deadLetterMessage, isReplayed } from '../../../archiver/dead-letter';
import { RecentIds } from '../../../archiver/dedup';
import { streamTopicFilter } from '../../../archiver/archiver';
import { parseConfig } from '../../../core/config';

describe('RecentIds', () => {
  it('remembers up to its capacity and forgets the oldest first', () => {
    const ids = new RecentIds(3);
    expect(['a', 'b', 'c'].map((x) => ids.add(x))).toEqual([true, true, true]);
    expect(ids.add('a')).toBe(false);
    expect(ids.add('d')).toBe(true);
    expect(ids.has('a')).toBe(false);
    expect(['b', 'c', 'd'].every((x) => ids.has(x))).toBe(true);
    expect(ids.size).toBe(3);
    expect(() => new RecentIds(0)).toThrow(ValidationError);
  });

  it('agrees with a plain list of the last `capacity` distinct ids over many wrap-arounds', () => {
    const capacity = 7;
    const ids = new RecentIds(capacity);
    const model: string[] = [];
    let seed = 12345;
    for (let i = 0; i < 5000; i++) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      const id = `e${seed % 20}`;
      const expectNew = !model.includes(id);
      expect(ids.add(id)).toBe(expectNew);
      if (expectNew) {
        model.push(id);
        if (model.length > capacity) model.shift();
      }
      expect(ids.size).toBe(model.length);
    }
    for (let n = 0; n < 20; n++) expect(ids.has(`e${n}`)).toBe(model.includes(`e${n}`));
  });
});

describe('dead letters', () => {
  it('keep the original key, value, timestamp and headers and add where and why', () => {
    const msg = deadLetterMessage(
      {
        topic: 't',
        partition: 4,
        offset: '99',
        key: Buffer.from('k'),
        value: Buffer.from([0, 1, 2]),
        headers: { a: Buffer.from('1'), [DLQ_HEADERS.reason]: 'forged' },
        timestamp: '1700000000000',
      },
      'undecodable',
    );
    expect(msg.key?.toString()).toBe('k');
    expect(msg.value).toEqual(Buffer.from([0, 1, 2]));
    expect(msg.timestamp).toBe('1700000000000');
    expect(msg.headers).toEqual({
      a: Buffer.from('1'),
      [DLQ_HEADERS.reason]: 'undecodable',
      [DLQ_HEADERS.topic]: 't',
      [DLQ_HEADERS.partition]: '4',
      [DLQ_HEADERS.offset]: '99',
    });
  });

  it('recognise replayed records by their header', () => {
    expect(isReplayed({ [REPLAY_HEADER]: Buffer.from('1') })).toBe(true);
    expect(isReplayed({ [REPLAY_HEADER]: '1' })).toBe(true);
    expect(isReplayed({ [REPLAY_HEADER]: '0' })).toBe(false);
    expect(isReplayed({})).toBe(false);
    expect(isReplayed(undefined)).toBe(false);
  });
});

describe('stream topic filter', () => {
  it('takes the shared topic and per-table topics, never the dead-letter topic', () => {
    const f = streamTopicFilter(
      parseConfig({ topics: { shared: 'ttl.shared', perTablePrefix: 'ttl.t.', deadLetter: 'ttl.t.dead' } })
        .topics,
    );
    expect(
      ['ttl.shared', 'ttl.t.orders', 'ttl.t.dead', 'ttlxt.orders', 'other', 'ttl.shared2'].filter(f),
    ).toEqual(['ttl.shared', 'ttl.t.orders']);
  });
});
