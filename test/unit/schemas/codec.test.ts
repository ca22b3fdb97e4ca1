import fc from 'fast-check';
import {
  HEADERS,
  SCHEMA_FINGERPRINTS,
  decodeMessage,
  encodeRemove,
  encodeRetraction,
  retractionType,
  streamRecordType,
  toAvroStreamRecord,
  type Decoded,
  type Encoding,
  type PoisonReason,
  type StreamRecord,
} from '../../../schemas';
import { poisonReason, recordArb, sampleRecord, sampleRetraction } from '../../support/stream-samples';

const ENCODINGS: Encoding[] = ['avro', 'json'];

describe.each(ENCODINGS)('%s encoding', (encoding) => {
  it('round-trips any valid REMOVE record exactly', () => {
    fc.assert(
      fc.property(recordArb, (record) => {
        const { value, headers } = encodeRemove(record, encoding);
        const decoded = decodeMessage(value, headers);
        expect(decoded).toEqual<Decoded>({ kind: 'remove', record });
        if (decoded.kind === 'remove')
          expect(Object.keys(decoded.record.dynamodb.OldImage)).toEqual(
            Object.keys(record.dynamodb.OldImage),
          );
      }),
      { numRuns: 300 },
    );
  });

  it('round-trips a retraction', () => {
    const retraction = sampleRetraction();
    const { value, headers } = encodeRetraction(retraction, encoding);
    expect(decodeMessage(value, headers)).toEqual<Decoded>({ kind: 'retract', retraction });
  });

  it('sets the headers', () => {
    const record = sampleRecord();
    expect(encodeRemove(record, encoding).headers).toEqual({
      [HEADERS.table]: 'orders',
      [HEADERS.kind]: 'remove',
      [HEADERS.encoding]: encoding,
      [HEADERS.eventId]: record.eventID,
      ...(encoding === 'avro' ? { [HEADERS.fingerprint]: SCHEMA_FINGERPRINTS.streamRecord } : {}),
    });
    expect(encodeRetraction(sampleRetraction(record), encoding).headers).toMatchObject({
      [HEADERS.kind]: 'retract',
      [HEADERS.eventId]: record.eventID,
      ...(encoding === 'avro' ? { [HEADERS.fingerprint]: SCHEMA_FINGERPRINTS.retraction } : {}),
    });
  });

  it('accepts headers as kafkajs hands them (Buffers, single-element arrays)', () => {
    const { value, headers } = encodeRemove(sampleRecord(), encoding);
    const asKafkajs = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [Buffer.from(v)]]));
    expect(decodeMessage(value, asKafkajs).kind).toBe('remove');
  });

  it('refuses to encode a record that breaks the contract', () => {
    const bad = {
      ...sampleRecord(),
      userIdentity: { type: 'User', principalId: 'me' },
    } as unknown as StreamRecord;
    expect(poisonReason(() => encodeRemove(bad, encoding))).toBe('schema-violation');
    const keyNotInImage = sampleRecord({ keys: { pk: { S: 'a' } }, oldImage: { pk: { S: 'b' } } });
    expect(poisonReason(() => encodeRemove(keyNotInImage, encoding))).toBe('schema-violation');
    const fractional = sampleRecord();
    fractional.dynamodb.ApproximateCreationDateTime = 1700000000.5;
    expect(poisonReason(() => encodeRemove(fractional, encoding))).toBe('schema-violation');
  });

  describe('poison', () => {
    const good = (): { value: Buffer; headers: Record<string, string> } =>
      encodeRemove(sampleRecord(), encoding);

    it('null and empty values are undecodable', () => {
      expect(poisonReason(() => decodeMessage(null, good().headers))).toBe('undecodable');
      expect(poisonReason(() => decodeMessage(Buffer.alloc(0), good().headers))).toBe('undecodable');
    });

    it('garbage bytes are undecodable', () => {
      fc.assert(
        fc.property(fc.uint8Array({ minLength: 1, maxLength: 200 }), (bytes) => {
          const reason = poisonReason(() => decodeMessage(Buffer.from(bytes), good().headers));
          // Random bytes can happen to be valid Avro; then the contract (zod) rejects them.
          expect(['undecodable', 'schema-violation']).toContain(reason);
        }),
        { numRuns: 300 },
      );
      expect(poisonReason(() => decodeMessage(Buffer.from([0xff, 0xfe, 0x00]), good().headers))).toBe(
        'undecodable',
      );
    });

    it('a truncated or extended message is undecodable', () => {
      const { value, headers } = good();
      expect(poisonReason(() => decodeMessage(value.subarray(0, value.length - 3), headers))).toBe(
        'undecodable',
      );
      if (encoding === 'avro')
        expect(poisonReason(() => decodeMessage(Buffer.concat([value, Buffer.from([0])]), headers))).toBe(
          'undecodable',
        );
    });

    it('missing kind or encoding headers', () => {
      const { value, headers } = good();
      for (const name of [HEADERS.kind, HEADERS.encoding]) {
        const without = { ...headers };
        delete without[name];
        expect(poisonReason(() => decodeMessage(value, without))).toBe('missing-headers');
      }
      expect(poisonReason(() => decodeMessage(value, {}))).toBe('missing-headers');
    });

    it('an unknown encoding header', () => {
      const { value, headers } = good();
      expect(poisonReason(() => decodeMessage(value, { ...headers, [HEADERS.encoding]: 'protobuf' }))).toBe(
        'unknown-encoding',
      );
    });

    it('an unknown kind header', () => {
      const { value, headers } = good();
      expect(poisonReason(() => decodeMessage(value, { ...headers, [HEADERS.kind]: 'insert' }))).toBe(
        'unknown-schema',
      );
    });

    it('a kind header that does not match the body', () => {
      const { value, headers } = good();
      // Avro: the fingerprint belongs to the stream-record family, not to retractions.
      // JSON: the body parses but is not a retraction.
      const expected: PoisonReason = encoding === 'avro' ? 'unknown-schema' : 'schema-violation';
      expect(poisonReason(() => decodeMessage(value, { ...headers, [HEADERS.kind]: 'retract' }))).toBe(
        expected,
      );
    });

    it('headers repeated with different values', () => {
      const { value, headers } = good();
      expect(
        poisonReason(() => decodeMessage(value, { ...headers, [HEADERS.kind]: ['remove', 'retract'] })),
      ).toBe('missing-headers');
    });

    it('table or eventId headers that disagree with the body', () => {
      const { value, headers } = good();
      expect(poisonReason(() => decodeMessage(value, { ...headers, [HEADERS.table]: 'other' }))).toBe(
        'schema-violation',
      );
      expect(poisonReason(() => decodeMessage(value, { ...headers, [HEADERS.eventId]: 'x' }))).toBe(
        'schema-violation',
      );
    });
  });
});

describe('Avro-only poison', () => {
  const { value, headers } = encodeRemove(sampleRecord(), 'avro');

  it('a missing fingerprint header', () => {
    const without = { ...headers };
    delete without[HEADERS.fingerprint];
    expect(poisonReason(() => decodeMessage(value, without))).toBe('missing-headers');
  });

  it('an unknown fingerprint', () => {
    expect(
      poisonReason(() => decodeMessage(value, { ...headers, [HEADERS.fingerprint]: 'ab'.repeat(32) })),
    ).toBe('unknown-schema');
  });

  it('valid Avro that fails the zod contract', () => {
    const avro = toAvroStreamRecord(sampleRecord());
    const bytes = streamRecordType.toBuffer({ ...avro, eventName: 'INSERT' });
    expect(poisonReason(() => decodeMessage(bytes, headers))).toBe('schema-violation');
    const negativeSize = streamRecordType.toBuffer({
      ...avro,
      dynamodb: { ...avro.dynamodb, SizeBytes: -1 },
    });
    expect(poisonReason(() => decodeMessage(negativeSize, headers))).toBe('schema-violation');
  });

  it('valid Avro with an AttributeValue that has two fields set', () => {
    const avro = toAvroStreamRecord(sampleRecord());
    const pk = avro.dynamodb.OldImage.pk;
    if (!pk) throw new Error('sample has pk');
    const twoTags = {
      ...avro,
      dynamodb: { ...avro.dynamodb, OldImage: { ...avro.dynamodb.OldImage, pk: { ...pk, N: '1' } } },
    };
    expect(poisonReason(() => decodeMessage(streamRecordType.toBuffer(twoTags), headers))).toBe(
      'schema-violation',
    );
  });

  it('valid Avro of a retraction that fails the contract', () => {
    const { headers: rh } = encodeRetraction(sampleRetraction(), 'avro');
    const bytes = retractionType.toBuffer({
      eventName: 'RETRACT',
      retractsEventID: '',
      table: 'orders',
      Keys: {},
      reason: 'x',
      retractedAt: 1,
    });
    expect(poisonReason(() => decodeMessage(bytes, rh))).toBe('schema-violation');
  });
});

describe('JSON encoding is what Lambda receives', () => {
  it('serialises in Lambda field order with base64 binaries', () => {
    const record = sampleRecord({
      keys: { pk: { S: 'a' } },
      oldImage: {
        pk: { S: 'a' },
        bin: { B: new Uint8Array([0, 255]) },
        n: { N: '1.5' },
        bs: { BS: [new Uint8Array([1])] },
      },
    });
    record.eventID = 'e1';
    const { value } = encodeRemove(record, 'json');
    expect(value.toString('utf8')).toBe(
      '{"eventID":"e1","eventName":"REMOVE","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"us-east-1",' +
        '"dynamodb":{"ApproximateCreationDateTime":1700000001,"Keys":{"pk":{"S":"a"}},' +
        '"OldImage":{"pk":{"S":"a"},"bin":{"B":"AP8="},"n":{"N":"1.5"},"bs":{"BS":["AQ=="]}},' +
        '"SequenceNumber":"000000000000000000001","SizeBytes":123,"StreamViewType":"NEW_AND_OLD_IMAGES"},' +
        '"eventSourceARN":"arn:aws:dynamodb:us-east-1:000000000000:table/orders/stream/2024-01-01T00:00:00.000",' +
        '"userIdentity":{"type":"Service","principalId":"dynamodb.amazonaws.com"}}',
    );
  });

  it('decodes a record as a Lambda consumer would write it by hand', () => {
    const lambda = {
      eventID: 'c4ca4238a0b923820dcc509a6f75849b',
      eventName: 'REMOVE',
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: 'eu-west-1',
      dynamodb: {
        ApproximateCreationDateTime: 1479499740,
        Keys: { Id: { N: '101' } },
        OldImage: { Id: { N: '101' }, Blob: { B: 'aGk=' }, Message: { S: 'New item!' } },
        SequenceNumber: '111000000000000000001',
        SizeBytes: 26,
        StreamViewType: 'NEW_AND_OLD_IMAGES',
      },
      eventSourceARN:
        'arn:aws:dynamodb:eu-west-1:123456789012:table/ExampleTableWithStream/stream/2015-06-27T00:48:05.899',
      userIdentity: { type: 'Service', principalId: 'dynamodb.amazonaws.com' },
    };
    const decoded = decodeMessage(Buffer.from(JSON.stringify(lambda)), {
      [HEADERS.kind]: 'remove',
      [HEADERS.encoding]: 'json',
    });
    if (decoded.kind !== 'remove') throw new Error('expected a remove');
    expect(Buffer.from(decoded.record.dynamodb.OldImage.Blob?.B ?? []).toString()).toBe('hi');
    expect(encodeRemove(decoded.record, 'json').value.toString()).toBe(JSON.stringify(lambda));
  });

  it('ignores unknown top-level fields (additive evolution) but not unknown AttributeValue types', () => {
    const json = JSON.parse(encodeRemove(sampleRecord(), 'json').value.toString()) as Record<string, unknown>;
    const headers = { [HEADERS.kind]: 'remove', [HEADERS.encoding]: 'json' };
    expect(decodeMessage(Buffer.from(JSON.stringify({ ...json, futureField: 1 })), headers).kind).toBe(
      'remove',
    );
    const dynamodb = json.dynamodb as { OldImage: Record<string, unknown> };
    dynamodb.OldImage.x = { DATE: '2024' };
    expect(poisonReason(() => decodeMessage(Buffer.from(JSON.stringify(json)), headers))).toBe(
      'schema-violation',
    );
  });

  it('does not crash on absurdly deep nesting', () => {
    let deep = '{"S":"x"}';
    for (let i = 0; i < 20_000; i++) deep = `{"L":[${deep}]}`;
    const json = encodeRemove(sampleRecord(), 'json').value.toString().replace('{"S":""}', deep);
    const reason = poisonReason(() =>
      decodeMessage(Buffer.from(json), { [HEADERS.kind]: 'remove', [HEADERS.encoding]: 'json' }),
    );
    expect(['schema-violation', 'undecodable']).toContain(reason);
  });
});
