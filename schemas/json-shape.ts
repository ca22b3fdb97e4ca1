import type { AttributeMap, AttributeValue } from './attribute-value';
import { withRecordMaps, withRetractionKeys, type Retraction, type StreamRecord } from './record';
import { DataError } from '../core/errors';

/** An AttributeValue in DynamoDB JSON as Lambda receives it: binaries are base64 strings. */
export type JsonAttributeValue =
  | { S: string }
  | { N: string }
  | { B: string }
  | { SS: string[] }
  | { NS: string[] }
  | { BS: string[] }
  | { M: Record<string, JsonAttributeValue> }
  | { L: JsonAttributeValue[] }
  | { NULL: true }
  | { BOOL: boolean };

const base64 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.length).toString('base64');

export function toJsonAttributeValue(v: AttributeValue): JsonAttributeValue {
  if (v.S !== undefined) return { S: v.S };
  if (v.N !== undefined) return { N: v.N };
  if (v.B !== undefined) return { B: base64(v.B) };
  if (v.SS !== undefined) return { SS: v.SS };
  if (v.NS !== undefined) return { NS: v.NS };
  if (v.BS !== undefined) return { BS: v.BS.map(base64) };
  if (v.M !== undefined) return { M: toJsonMap(v.M) };
  if (v.L !== undefined) return { L: v.L.map(toJsonAttributeValue) };
  if (v.NULL !== undefined) return { NULL: true };
  if (v.BOOL !== undefined) return { BOOL: v.BOOL };
  throw new DataError('not an AttributeValue');
}

export function toJsonMap(m: AttributeMap): Record<string, JsonAttributeValue> {
  return Object.fromEntries(Object.keys(m).map((k) => [k, toJsonAttributeValue(m[k] as AttributeValue)]));
}

/** The record object in Lambda's field order; JSON.stringify of it is the JSON encoding. */
export function toLambdaJson(r: StreamRecord): unknown {
  return {
    ...withRecordMaps(r, toJsonMap),
    ...(r.userIdentity
      ? { userIdentity: { type: r.userIdentity.type, principalId: r.userIdentity.principalId } }
      : {}),
  };
}

export function toRetractionJson(r: Retraction): unknown {
  return withRetractionKeys(r, toJsonMap);
}
