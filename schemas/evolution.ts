import type { SchemaVersion } from './avro-registry';

export interface CompatibilityProblem {
  reader: string;
  writer: string;
  message: string;
}

/**
 * Full transitive compatibility inside each schema family: every version can read data written
 * by every other (avsc createResolver succeeds both ways). Decoders resolve any known writer
 * fingerprint to the newest reader, and consumers still on an older release read newer data, so
 * both directions matter. Returns the problems; empty means compatible.
 */
export function checkCompatibility(versions: readonly SchemaVersion[]): CompatibilityProblem[] {
  const problems: CompatibilityProblem[] = [];
  const label = (v: SchemaVersion): string => `${v.name}.v${v.version}`;
  for (const reader of versions) {
    for (const writer of versions) {
      if (reader === writer || reader.name !== writer.name) continue;
      try {
        reader.type.createResolver(writer.type);
      } catch (err) {
        problems.push({ reader: label(reader), writer: label(writer), message: (err as Error).message });
      }
    }
  }
  return problems;
}
