import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { addLastWriteStamp, type LastWriteStampOptions } from '../../policy';

/**
 * The real SDK client with the write stamp of `options`, stopped after serialization: nothing is sent, and `sent`
 * gets the JSON body of each request as the server would receive it.
 */
export function capturingClient(options: LastWriteStampOptions): {
  client: DynamoDBClient;
  sent: Array<Record<string, unknown>>;
} {
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:9',
    credentials: { accessKeyId: 'unit', secretAccessKey: 'unit' },
  });
  addLastWriteStamp(client, options);
  const sent: Array<Record<string, unknown>> = [];
  client.middlewareStack.add(
    () => async (args) => {
      const body = (args.request as { body: Uint8Array | string }).body;
      sent.push(
        JSON.parse(
          typeof body === 'string'
            ? body
            : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'),
        ) as Record<string, unknown>,
      );
      return { output: { $metadata: {} }, response: {} };
    },
    { step: 'build', name: 'captureSerializedRequest' },
  );
  return { client, sent };
}
