import { S3Client } from '@aws-sdk/client-s3';
import { MULTIPART_THRESHOLD, openArchiveStorage, S3ArchiveStorage } from '../../../../archive/storage';
import { parseConfig } from '../../../../core/config';
import { ConfigError } from '../../../../core/errors';

interface Sent {
  command: string;
  input: Record<string, unknown>;
}

/** An S3 client that answers every call itself and records what was asked, so no server is needed. */
function recordingClient(): { s3: S3Client; sent: Sent[] } {
  const s3 = new S3Client({
    region: 'us-east-1',
    credentials: { accessKeyId: 'k', secretAccessKey: 's' },
  });
  const sent: Sent[] = [];
  const answers: Record<string, Record<string, unknown>> = {
    CreateMultipartUploadCommand: { UploadId: 'upload-1' },
    UploadPartCommand: { ETag: '"etag"' },
    CompleteMultipartUploadCommand: { Location: 'x' },
    PutObjectCommand: { ETag: '"etag"' },
  };
  s3.middlewareStack.add(
    (_next, context) => async (args) => {
      const command = context.commandName ?? 'unknown';
      sent.push({ command, input: args.input as Record<string, unknown> });
      return { output: { ...(answers[command] ?? {}), $metadata: {} }, response: {} };
    },
    { step: 'initialize', name: 'testRecorder' },
  );
  return { s3, sent };
}

const inputsOf = (sent: Sent[], command: string): Array<Record<string, unknown>> =>
  sent.filter((s) => s.command === command).map((s) => s.input);

describe('archive.s3Sse and archive.s3KmsKeyId', () => {
  it('ask every PutObject for SSE-KMS with the key', async () => {
    const { s3, sent } = recordingClient();
    const config = parseConfig({
      archive: { url: 's3://bucket/prefix', s3Sse: 'aws:kms', s3KmsKeyId: 'arn:aws:kms:eu-west-1:1:key/k' },
    });
    const storage = openArchiveStorage(config, s3);
    await storage.put('a/file.avro', Buffer.from('rows'));
    await storage.put('_manifests/m.json', Buffer.from('{}'));
    const puts = inputsOf(sent, 'PutObjectCommand');
    expect(puts).toHaveLength(2);
    for (const input of puts)
      expect(input).toMatchObject({
        Bucket: 'bucket',
        ServerSideEncryption: 'aws:kms',
        SSEKMSKeyId: 'arn:aws:kms:eu-west-1:1:key/k',
      });
  });

  it('ask a multipart upload (above MULTIPART_THRESHOLD) for it in CreateMultipartUpload', async () => {
    const { s3, sent } = recordingClient();
    const storage = new S3ArchiveStorage(s3, 'bucket', 'p', { sse: 'aws:kms', kmsKeyId: 'alias/archive' });
    await storage.put('big.avro', Buffer.alloc(MULTIPART_THRESHOLD + 1));
    const [create] = inputsOf(sent, 'CreateMultipartUploadCommand');
    expect(create).toMatchObject({ ServerSideEncryption: 'aws:kms', SSEKMSKeyId: 'alias/archive' });
    expect(inputsOf(sent, 'UploadPartCommand')).toHaveLength(2);
    expect(inputsOf(sent, 'PutObjectCommand')).toHaveLength(0);
  });

  it('AES256 asks for S3-managed keys and names no key; unset leaves it to the bucket', async () => {
    const aes = recordingClient();
    await openArchiveStorage(parseConfig({ archive: { url: 's3://b', s3Sse: 'AES256' } }), aes.s3).put(
      'x',
      Buffer.from('1'),
    );
    const [put] = inputsOf(aes.sent, 'PutObjectCommand');
    expect(put?.ServerSideEncryption).toBe('AES256');
    expect(put).not.toHaveProperty('SSEKMSKeyId');

    const plain = recordingClient();
    await openArchiveStorage(parseConfig({ archive: { url: 's3://b' } }), plain.s3).put(
      'x',
      Buffer.from('1'),
    );
    const [bare] = inputsOf(plain.sent, 'PutObjectCommand');
    expect(bare).not.toHaveProperty('ServerSideEncryption');
    expect(bare).not.toHaveProperty('SSEKMSKeyId');
  });

  it('refuse a KMS key without aws:kms, and an unknown mode, naming the setting', () => {
    expect(() => parseConfig({ archive: { s3KmsKeyId: 'k' } })).toThrow(ConfigError);
    expect(() => parseConfig({ archive: { s3Sse: 'AES256', s3KmsKeyId: 'k' } })).toThrow(
      /archive\.s3KmsKeyId \(TTLSTREAM_ARCHIVE_S3_KMS_KEY_ID\): a KMS key needs archive\.s3Sse/,
    );
    expect(() => parseConfig({ archive: { s3Sse: 'aws:kms:dsse' } })).toThrow(
      /archive\.s3Sse \(TTLSTREAM_ARCHIVE_S3_SSE\)/,
    );
  });
});
