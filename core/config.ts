import { readFileSync, existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import { ConfigSchema, DEFAULT_ARCHIVE_URL, type ConfigInput, type TtlstreamConfig } from './config-schema';
import { ConfigError } from './errors';
import { isServiceLinkVariable, serviceOfLink } from './service-links';

export {
  ConfigSchema,
  DEFAULT_ARCHIVE_URL,
  type TtlstreamConfig,
  type ConfigInput,
  type ApiSettings,
  type ArchiveSettings,
  type DynamodbSettings,
  type GuardSettings,
  type ProducerSettings,
  type ScannerSettings,
  type StreamsSettings,
  type SchemasSettings,
  type TablesSettings,
  type TopicsSettings,
} from './config-schema';

/** Where `npm run infra:up` run in `cwd` writes the endpoints of the local stack (git-ignored). */
export function stackEndpointsPath(cwd = process.cwd()): string {
  return resolve(cwd, process.env.TTLSTREAM_STATE_DIR ?? '.ttlstream', 'endpoints.json');
}

/** The variable that puts a command on a local stack: the folder holding the stack's endpoints.json. */
export const LOCAL_STACK_VARIABLE = 'TTLSTREAM_LOCAL_STACK';

/**
 * Which endpoints file a command uses. Only a local stack configured explicitly (`--local-stack <dir>` or
 * TTLSTREAM_LOCAL_STACK=<dir>, which the project's own scripts set) is read; a file that merely lies in the
 * working folder is not, so a command run elsewhere cannot switch silently between the stack and AWS. That
 * file is reported as `ignored`, for the CLI to say so.
 */
export interface StackEndpointsChoice {
  used?: { path: string; by: string };
  ignored?: string;
}

export function chooseStackEndpoints(options: {
  localStack?: string | undefined;
  env: NodeJS.ProcessEnv;
  cwd: string;
  exists?: (path: string) => boolean;
}): StackEndpointsChoice {
  const exists = options.exists ?? existsSync;
  const fromEnv = options.env[LOCAL_STACK_VARIABLE];
  const [dir, by] =
    options.localStack !== undefined
      ? [options.localStack, '--local-stack']
      : fromEnv !== undefined && fromEnv !== ''
        ? [fromEnv, LOCAL_STACK_VARIABLE]
        : [undefined, undefined];
  if (dir !== undefined && by !== undefined) {
    const path = resolve(options.cwd, dir, 'endpoints.json');
    if (!exists(path))
      throw new ConfigError(
        `${by} ${dir}: no local stack there (${path} not found): start it with \`npm run infra:up\`, or unset ${by} to use the configured endpoints`,
      );
    return { used: { path, by } };
  }
  const candidates = [resolve(options.cwd, '.ttlstream', 'endpoints.json')];
  const stateDir = options.env.TTLSTREAM_STATE_DIR;
  if (stateDir) candidates.unshift(resolve(options.cwd, stateDir, 'endpoints.json'));
  const ignored = candidates.find((c) => exists(c));
  return ignored ? { ignored } : {};
}

type JsonSchemaNode = {
  type?: string | string[];
  properties?: Record<string, JsonSchemaNode>;
  items?: JsonSchemaNode;
  anyOf?: JsonSchemaNode[];
};

type SettingRow = { path: string[]; env: string; type: string; node: JsonSchemaNode };
let settingRows: readonly SettingRow[] | undefined;

/**
 * Leaf settings with their env var names, derived from the schema so the two cannot drift. Derived once per process:
 * z.toJSONSchema of the whole schema cost 60 ms of CPU, a tenth of a command's start, on every loadConfig.
 */
export function settingsTable(): readonly SettingRow[] {
  settingRows ??= Object.freeze(deriveSettingsTable());
  return settingRows;
}

function deriveSettingsTable(): SettingRow[] {
  const root = z.toJSONSchema(ConfigSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchemaNode;
  const out: SettingRow[] = [];
  const walk = (node: JsonSchemaNode, path: string[]): void => {
    if (node.type === 'object' && node.properties) {
      for (const [key, child] of Object.entries(node.properties)) walk(child, [...path, key]);
      return;
    }
    // A switch or its object of details (kafka.ssl: true, or { caFile, … }): the switch is a setting of its
    // own, and each field of the object one more.
    const object = node.anyOf?.find((n) => n.type === 'object' && n.properties);
    const scalar = node.anyOf?.find((n) => n !== object);
    if (object?.properties && scalar) {
      const { anyOf: _, ...rest } = node;
      out.push({
        path,
        env: envName(path),
        type: String(scalar.type ?? 'string'),
        node: { ...rest, ...scalar },
      });
      for (const [key, child] of Object.entries(object.properties)) walk(child, [...path, key]);
      return;
    }
    const type = Array.isArray(node.type) ? (node.type[0] ?? 'string') : (node.type ?? 'string');
    out.push({ path, env: envName(path), type, node });
  };
  walk(root, []);
  return out;
}

export function envName(path: string[]): string {
  return 'TTLSTREAM_' + path.map((p) => p.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()).join('_');
}

/**
 * TTLSTREAM_* variables that are not settings but steer a process or the local stack. Any other
 * TTLSTREAM_* name that is not a setting is a typo, and a typo in a setting must not pass silently.
 */
const PROCESS_VARIABLES = new Set([
  'TTLSTREAM_CONFIG',
  'TTLSTREAM_STATE_DIR',
  LOCAL_STACK_VARIABLE,
  'TTLSTREAM_QUIET',
  'TTLSTREAM_CRASH_AT',
  'TTLSTREAM_OWNER_ID',
  'TTLSTREAM_SHUTDOWN_TIMEOUT',
  'TTLSTREAM_DYNAMODB_INMEMORY',
]);
const PROCESS_VARIABLE_PREFIXES = [
  'TTLSTREAM_STACK_',
  'TTLSTREAM_TEST_',
  'TTLSTREAM_FAULT_',
  'TTLSTREAM_BENCH_',
];

/**
 * Sections merged into another, whose settings keep their names under the new section. The old names (file keys and
 * TTLSTREAM_* variables) are accepted, with a warning naming the new one, until OLD_NAMES_REFUSED_IN: `archiver`
 * became part of `archive` in 0.2.0, one section for the archiver's settings.
 */
export const MERGED_SECTIONS: ReadonlyArray<{ from: string; into: string; keys: readonly string[] }> = [
  {
    from: 'archiver',
    into: 'archive',
    keys: ['monitorIntervalMs', 'sessionTimeoutMs', 'rebalanceTimeoutMs'],
  },
];

/** The first version that refuses the old names of MERGED_SECTIONS. */
export const OLD_NAMES_REFUSED_IN = '0.3.0';

/** The old variable names of MERGED_SECTIONS' settings, with the new setting's path. */
function renamedVariables(): Array<{ env: string; path: string[] }> {
  return MERGED_SECTIONS.flatMap(({ from, into, keys }) =>
    keys.map((key) => ({ env: envName([from, key]), path: [into, key] })),
  );
}

/** A deprecation nobody asked to hear about (loadConfig or parseConfig without onWarning) still reaches stderr. */
function emitRenamedWarning(message: string): void {
  process.emitWarning(message, { type: 'DeprecationWarning', code: 'TTLSTREAM_RENAMED_SETTING' });
}

function renamedWarning(oldName: string, newName: string): string {
  return `${oldName} is now ${newName}; the old name is refused from ${OLD_NAMES_REFUSED_IN}: rename it`;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * `values` (one layer: a config file, the endpoints file, overrides, or parseConfig's input) with the settings of
 * MERGED_SECTIONS moved to their new section, each with a warning. Throws ConfigError for a key the old section never
 * had, or a setting given under both names in the same layer.
 */
function renameMergedSections(
  values: Record<string, unknown>,
  where: string,
  warn: (message: string) => void,
): Record<string, unknown> {
  let out = values;
  for (const { from, into, keys } of MERGED_SECTIONS) {
    if (!Object.hasOwn(out, from)) continue;
    const { [from]: old, ...rest } = out;
    const target = rest[into] ?? {};
    if (!isPlainObject(old)) throw new ConfigError(`${from} (${where}): expected an object (now ${into})`);
    if (!isPlainObject(target)) throw new ConfigError(`${into} (${where}): expected an object`);
    const merged = { ...target };
    for (const [key, value] of Object.entries(old)) {
      if (!keys.includes(key))
        throw new ConfigError(`${from}.${key} (${envName([from, key])}): not a ttlstream setting`);
      if (Object.hasOwn(merged, key))
        throw new ConfigError(
          `${from}.${key} and ${into}.${key} are both set (${where}): ${from}.${key} is the old name of ${into}.${key}; remove it`,
        );
      merged[key] = value;
      warn(renamedWarning(`${from}.${key} (${where})`, `${into}.${key} (${envName([into, key])})`));
    }
    out = { ...rest, [into]: merged };
  }
  return out;
}

function checkUnknownVariables(env: NodeJS.ProcessEnv, known: Set<string>): void {
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith('TTLSTREAM_') || known.has(name) || PROCESS_VARIABLES.has(name)) continue;
    if (PROCESS_VARIABLE_PREFIXES.some((prefix) => name.startsWith(prefix))) continue;
    // A Kubernetes Service named after the product (ttlstream-api → TTLSTREAM_API_SERVICE_HOST, …): not ours.
    if (value !== undefined && isServiceLinkVariable(name, value)) continue;
    throw new ConfigError(`${name}: not a ttlstream setting (see docs/configuration.md)`);
  }
}

/**
 * A setting's variable holding a Service's link value (TTLSTREAM_API_PORT=tcp://10.0.0.1:8080 for a Service named
 * ttlstream-api): the kubelet set it, the operator did not (a variable of the container's own env wins over it), and
 * no setting takes such a value. It is ignored, with a warning, so the setting keeps its value from the config
 * file or its default (decision 0027).
 */
function serviceLinkWarning(setting: SettingRow, raw: string): string {
  return (
    `${setting.env}=${raw} is the variable Kubernetes sets for the Service ${serviceOfLink(setting.env)}, not a ` +
    `value of ${setting.path.join('.')}: ignored (${setting.path.join('.')} comes from the config file or its ` +
    `default); set enableServiceLinks: false in the pod spec, or ${setting.env} in the container's env`
  );
}

function parseEnvValue(raw: string, type: string, node: JsonSchemaNode, env: string): unknown {
  switch (type) {
    case 'number':
    case 'integer': {
      const n = Number(raw);
      if (raw.trim() === '' || !Number.isFinite(n))
        throw new ConfigError(`${env}: expected a number, got "${raw}"`);
      return n;
    }
    case 'boolean':
      if (raw === 'true' || raw === '1') return true;
      if (raw === 'false' || raw === '0') return false;
      throw new ConfigError(`${env}: expected true or false, got "${raw}"`);
    case 'array':
      if (node.items?.type === 'object') {
        try {
          return JSON.parse(raw) as unknown;
        } catch {
          throw new ConfigError(`${env}: expected a JSON array`);
        }
      }
      return raw
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s.length > 0);
    case 'object':
      try {
        return JSON.parse(raw) as unknown;
      } catch {
        throw new ConfigError(`${env}: expected a JSON object`);
      }
    default:
      return raw;
  }
}

function setPath(target: Record<string, unknown>, path: string[], value: unknown, env: string): void {
  let node = target;
  for (const [i, key] of path.slice(0, -1).entries()) {
    const next = node[key];
    // TTLSTREAM_KAFKA_SSL=false with TTLSTREAM_KAFKA_SSL_CA_FILE: which one is meant is not ours to guess.
    if (next === false) throw new ConfigError(`${env}: contradicts ${envName(path.slice(0, i + 1))}=false`);
    if (typeof next !== 'object' || next === null) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1] as string] = value;
}

function deepMerge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    // `true` over an object of details (kafka.ssl: { caFile } in the file, TTLSTREAM_KAFKA_SSL=true) keeps them.
    if (v === true && typeof b === 'object' && b !== null && !Array.isArray(b)) continue;
    out[k] =
      typeof v === 'object' &&
      v !== null &&
      !Array.isArray(v) &&
      typeof b === 'object' &&
      b !== null &&
      !Array.isArray(b)
        ? deepMerge(b as Record<string, unknown>, v as Record<string, unknown>)
        : v;
  }
  return out;
}

function readJsonFile(path: string, what: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`${what} ${path}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text) as unknown;
  } catch (err) {
    // V8's message quotes the text around the error, which in a config file can be a token or a
    // password: say where it is, never what is there.
    throw new ConfigError(`${what} ${path}: not valid JSON${jsonErrorPlace(text, (err as Error).message)}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new ConfigError(`${what} ${path}: not a JSON object`);
  return parsed as Record<string, unknown>;
}

/** ` at line L, column C` from a JSON.parse message's position, or '' (the end of the text when it ended early). */
export function jsonErrorPlace(text: string, message: string): string {
  const m = /at position (\d+)/.exec(message);
  const position = m ? Number(m[1]) : /end of JSON input/.test(message) ? text.length : undefined;
  if (position === undefined) return '';
  const before = text.slice(0, position).split('\n');
  return ` at line ${before.length}, column ${(before[before.length - 1]?.length ?? 0) + 1}`;
}

export interface LoadConfigOptions {
  /** JSON config file; defaults to $TTLSTREAM_CONFIG. */
  file?: string;
  env?: NodeJS.ProcessEnv;
  /** Programmatic overrides (tests, CLI flags), applied last. */
  overrides?: ConfigInput;
  /**
   * Read the endpoints file of a local stack when one is configured (default true); false never reads it
   * (unit tests, whatever the environment says).
   */
  useStackEndpoints?: boolean;
  /** The local stack's folder (`--local-stack`), over TTLSTREAM_LOCAL_STACK. */
  localStack?: string;
  /** Where a relative local-stack folder is resolved (default the process's working folder). */
  cwd?: string;
  /**
   * Told what an operator should know of: what was ignored (a Kubernetes service link on a setting's variable), and a
   * setting given under its old name (MERGED_SECTIONS; without onWarning, a DeprecationWarning).
   */
  onWarning?: (message: string) => void;
}

/** Where a setting's value came from, lowest precedence first. */
export type ConfigSource = 'default' | 'endpoints file' | 'config file' | 'env' | 'flag';

interface ConfigLayer {
  source: Exclude<ConfigSource, 'default'>;
  values: Record<string, unknown>;
}

/**
 * The endpoints file describes the whole local stack, including services ttlstream has no setting for (the schema
 * registry the integration tests' consumers use): ttlstream takes the sections it has settings for and leaves the
 * rest. Within a section every key must still be a setting.
 */
function stackSettings(values: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(values).filter(([section]) => section in ConfigSchema.shape));
}

/**
 * The settings of TTLSTREAM_* variables (and their old names). The settings table (z.toJSONSchema of the whole
 * schema, about 10 ms of a command's start) is derived only when some TTLSTREAM_* variable other than a process
 * variable is set: without one there is nothing to parse and nothing to refuse.
 */
function envSettings(
  env: NodeJS.ProcessEnv,
  warn: (message: string) => void,
  onWarning: ((message: string) => void) | undefined,
): Record<string, unknown> {
  const fromEnv: Record<string, unknown> = {};
  if (!Object.keys(env).some((name) => name.startsWith('TTLSTREAM_') && !PROCESS_VARIABLES.has(name)))
    return fromEnv;
  const settings = settingsTable();
  const renamed = renamedVariables();
  checkUnknownVariables(env, new Set([...settings.map((s) => s.env), ...renamed.map((r) => r.env)]));
  for (const { env: oldName, path } of renamed) {
    const raw = env[oldName];
    const setting = settings.find((s) => s.path.join('.') === path.join('.'));
    if (raw === undefined || setting === undefined) continue;
    if (env[setting.env] !== undefined)
      throw new ConfigError(
        `${oldName} and ${setting.env} are both set: ${oldName} is the old name of ${setting.env}; remove it`,
      );
    warn(renamedWarning(oldName, `${setting.env} (${path.join('.')})`));
    setPath(fromEnv, setting.path, parseEnvValue(raw, setting.type, setting.node, oldName), oldName);
  }
  for (const setting of settings) {
    const raw = env[setting.env];
    if (raw !== undefined && isServiceLinkVariable(setting.env, raw)) {
      onWarning?.(serviceLinkWarning(setting, raw));
      continue;
    }
    if (raw !== undefined)
      setPath(
        fromEnv,
        setting.path,
        parseEnvValue(raw, setting.type, setting.node, setting.env),
        setting.env,
      );
  }
  return fromEnv;
}

/** The layers over the schema defaults, lowest precedence first. */
function configLayers(options: LoadConfigOptions): ConfigLayer[] {
  const env = options.env ?? process.env;
  const warn = options.onWarning ?? emitRenamedWarning;
  const layers: ConfigLayer[] = [];
  if (options.useStackEndpoints ?? true) {
    const { used } = chooseStackEndpoints({
      localStack: options.localStack,
      env,
      cwd: options.cwd ?? process.cwd(),
    });
    if (used)
      layers.push({
        source: 'endpoints file',
        values: stackSettings(readJsonFile(used.path, 'stack endpoints file')),
      });
  }
  const file = options.file ?? env.TTLSTREAM_CONFIG;
  if (file)
    layers.push({
      source: 'config file',
      values: renameMergedSections(readJsonFile(file, 'config file'), `config file ${file}`, warn),
    });
  layers.push({ source: 'env', values: envSettings(env, warn, options.onWarning) });
  if (options.overrides)
    layers.push({
      source: 'flag',
      values: renameMergedSections(options.overrides as Record<string, unknown>, 'overrides', warn),
    });
  return layers;
}

/**
 * Precedence, lowest first: schema defaults, the local stack's endpoints file (only when a local stack is
 * configured: chooseStackEndpoints), the config file,
 * TTLSTREAM_* environment variables, programmatic overrides. Throws ConfigError naming the setting.
 */
export function loadConfig(options: LoadConfigOptions = {}): TtlstreamConfig {
  return parseConfig(
    configLayers(options).reduce<Record<string, unknown>>((merged, l) => deepMerge(merged, l.values), {}),
  );
}

/**
 * Where each setting of `loadConfig(options)` comes from, by dotted path (the paths of `ttlstream config`): the
 * highest layer that sets it, else the schema default. An array or object value set as a whole counts for the
 * settings under it.
 */
export function configSources(options: LoadConfigOptions = {}): Map<string, ConfigSource> {
  const out = new Map<string, ConfigSource>();
  const visit = (value: unknown, path: string[], source: ConfigSource): void => {
    if (
      typeof value === 'object' &&
      value !== null &&
      !Array.isArray(value) &&
      Object.keys(value).length > 0
    ) {
      for (const [k, v] of Object.entries(value)) visit(v, [...path, k], source);
      return;
    }
    if (value !== undefined) out.set(path.join('.'), source);
  };
  for (const layer of configLayers(options)) visit(layer.values, [], layer.source);
  return out;
}

/** The source of the setting at `path` given `configSources` (a parent set as a whole counts), else 'default'. */
export function sourceOf(sources: ReadonlyMap<string, ConfigSource>, path: string): ConfigSource {
  for (let p = path; p !== ''; p = p.includes('.') ? p.slice(0, p.lastIndexOf('.')) : '') {
    const s = sources.get(p);
    if (s) return s;
  }
  return 'default';
}

/**
 * An archiver refuses the built-in archive.url outside a local stack: in a pod, /tmp is an emptyDir that dies with
 * it while the archiver commits its offsets, so a forgotten TTLSTREAM_ARCHIVE_URL would lose the archive for good.
 * "Outside a local stack" is: no local stack configured (`--local-stack`, TTLSTREAM_LOCAL_STACK: the machine's own
 * stack, where a scratch archive is fine). "Set" is: any layer but the schema default names it (config file, env,
 * flag), even to the default's value. Throws ConfigError naming the setting.
 */
export function requireArchiveUrl(options: LoadConfigOptions = {}): void {
  const env = options.env ?? process.env;
  const stack =
    (options.useStackEndpoints ?? true) &&
    chooseStackEndpoints({ localStack: options.localStack, env, cwd: options.cwd ?? process.cwd() }).used;
  if (stack) return;
  if (sourceOf(configSources(options), 'archive.url') !== 'default') return;
  throw new ConfigError(
    `archive.url (TTLSTREAM_ARCHIVE_URL) is not set: the archiver will not write to the default ${DEFAULT_ARCHIVE_URL} ` +
      'outside a local stack (a folder that dies with its container while the offsets are committed); set it to ' +
      's3://bucket/prefix, or to a file:/// folder on a volume that outlives the process',
  );
}

/**
 * Validates a configuration object and fills in the defaults. Settings under an old name (MERGED_SECTIONS) are taken
 * under the new one, with a warning to `options.onWarning` (default: a DeprecationWarning).
 */
export function parseConfig(
  input: unknown,
  options: { onWarning?: (message: string) => void } = {},
): TtlstreamConfig {
  const renamed = isPlainObject(input)
    ? renameMergedSections(input, 'configuration', options.onWarning ?? emitRenamedWarning)
    : input;
  // Parsed once per process: zod's compiled fast path (generated on the first parse of each object schema) cost about
  // 7 ms of every command's start and never paid back.
  const result = ConfigSchema.safeParse(renamed, { jitless: true });
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  if (issue?.code === 'unrecognized_keys') {
    const path = [...issue.path.map(String), issue.keys[0] ?? ''];
    throw new ConfigError(`${path.join('.')} (${envName(path)}): not a ttlstream setting`);
  }
  const path = issue?.path.map(String) ?? [];
  // A list element (kafka.brokers.0) is set by the list's variable (TTLSTREAM_KAFKA_BROKERS).
  const firstIndex = path.findIndex((p) => /^\d+$/.test(p));
  const settingPath = firstIndex === -1 ? path : path.slice(0, firstIndex);
  const where = path.length > 0 ? `${path.join('.')} (${envName(settingPath)})` : 'configuration';
  throw new ConfigError(`${where}: ${issue?.message ?? 'invalid'}`);
}
