import { archivedPrefix, toLambdaJson, toRetractionJson, type ArchivedRecord } from '../../schemas';

/** The JSON form of an archived row: the record exactly as Lambda would get it (binary as base64). */
export function archivedToJson(row: ArchivedRecord): unknown {
  return {
    ...archivedPrefix(row),
    record: row.record ? toLambdaJson(row.record) : null,
    retraction: row.retraction ? toRetractionJson(row.retraction) : null,
  };
}
