// config.minimesh.io/<setting> overrides: parsed from CLI flags, the pod's annotations and its
// namespace's annotations (in that order of precedence), falling back to the mesh configuration.
// A malformed value is never applied: the next layer's value (or the default) is used and a warning
// names the annotation, the bad value and what was expected.
import {
  ANNOTATIONS,
  ConfigError,
  DEFAULT_INBOUND_POLICIES,
  type DefaultInboundPolicy,
  formatPortRanges,
  parseBoolean,
  parseCidrList,
  parseLogLevel,
  parsePortRanges,
  type LogLevel,
  type MeshConfig,
  type PortRange,
} from '@minimesh/config';
import type { Container, StringMap } from './types.js';

export interface ParseContext {
  /** Named container ports, for opaque-ports given by name. */
  namedPorts?: ReadonlyMap<string, number>;
}

/** One override: the setting it changes, how its text is read, its default, how a warning names its value. */
interface Override<S extends string, T> {
  /** The field of InjectSettings it sets. */
  setting: S;
  /** Reads a flag's or annotation's text; throws ConfigError naming `field` (the annotation). */
  parse(field: string, value: string, ctx: ParseContext): T;
  /** The value when no flag or annotation sets it: the mesh configuration's. */
  fallback(config: MeshConfig): NoInfer<T>;
  /** The value as a warning names it ("" reads "none"). */
  describe(value: NoInfer<T>): string;
  /** What the CLI's flag of the same name says about it. */
  help: string;
}

const override = <S extends string, T>(o: Override<S, T>): Override<S, T> => o;

const QUANTITY = /^\d+(\.\d+)?(m|Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?$/;
const IMAGE_NAME = /^[A-Za-z0-9][A-Za-z0-9._/:-]*$/;
const IMAGE_TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

const text = (v: string): string => v;
const ports = (field: string, value: string): PortRange[] => parsePortRanges(field, value);

/** A parser of trimmed text that must match `re`; `expected` says what it should look like. */
const matching =
  (re: RegExp, expected: string) =>
  (field: string, value: string): string => {
    const t = value.trim();
    if (!re.test(t)) throw new ConfigError(field, value, expected);
    return t;
  };
const quantity = matching(QUANTITY, 'a Kubernetes quantity such as 100m, 20Mi or 1');

/**
 * Every config.minimesh.io/<setting> override, one row each (the row's key is the name after the
 * prefix, which is also the CLI flag's name).
 */
export const OVERRIDES = {
  'proxy-image': override({
    setting: 'proxyImage',
    parse(field, value) {
      const t = value.trim();
      const last = t.split('/').pop() ?? '';
      // 255: the longest repository name a registry accepts (distribution/reference's NameTotalLengthMax).
      if (t.length > 255 || !IMAGE_NAME.test(t) || last.includes(':') || t.includes('@')) {
        throw new ConfigError(field, value, `an image name without tag or digest (the tag comes from proxy-version)`);
      }
      return t;
    },
    fallback: (c) => c.proxy.image.name,
    describe: text,
    help: 'proxy image name, without tag',
  }),
  'proxy-version': override({
    setting: 'proxyVersion',
    parse: matching(IMAGE_TAG, 'an image tag such as 0.1.0'),
    fallback: (c) => c.proxy.image.version,
    describe: text,
    help: 'proxy image tag',
  }),
  /** Extra inbound ports never redirected; the config's list is always included. */
  'skip-inbound-ports': override({
    setting: 'skipInboundPorts',
    parse: ports,
    fallback: () => [],
    describe: formatPortRanges,
    help: 'inbound ports the proxy never sees, e.g. 8081,9000-9010',
  }),
  'skip-outbound-ports': override({
    setting: 'skipOutboundPorts',
    parse: ports,
    fallback: () => [],
    describe: formatPortRanges,
    help: 'outbound ports the proxy never sees, e.g. 25,3306',
  }),
  /** CIDR strings as given. */
  'skip-subnets': override({
    setting: 'skipSubnets',
    parse: (field, value) => parseCidrList(field, value).map((c) => `${c.address}/${c.prefix}`),
    fallback: () => [],
    describe: (v) => v.join(','),
    help: 'CIDRs whose inbound connections bypass the proxy (matched on the source address), e.g. 10.96.0.0/12',
  }),
  'proxy-uid': override({
    setting: 'proxyUid',
    parse(field, value) {
      const t = value.trim();
      const n = /^\d+$/.test(t) ? Number(t) : NaN;
      if (!(n >= 1 && n <= 2147483647)) throw new ConfigError(field, value, 'a non-root user id 1-2147483647');
      return n;
    },
    fallback: (c) => c.proxy.uid,
    describe: String,
    help: 'user id of the proxy (proxy-init skips its traffic)',
  }),
  'proxy-log-level': override({
    setting: 'logLevel',
    parse: (field, value): LogLevel => parseLogLevel(field, value),
    fallback: (c) => c.proxy.logLevel,
    describe: text,
    help: 'trace, debug, info, warn, error',
  }),
  'opaque-ports': override({
    setting: 'opaquePorts',
    parse: parseOpaquePorts,
    fallback: (c) => parsePortRanges('proxy.opaquePorts', c.proxy.opaquePorts),
    describe: formatPortRanges,
    help: 'ports never protocol-detected (numbers, ranges or container port names)',
  }),
  'proxy-cpu-request': override({
    setting: 'cpuRequest',
    parse: quantity,
    fallback: (c) => c.proxy.resources.cpu.request,
    describe: text,
    help: 'e.g. 100m',
  }),
  'proxy-cpu-limit': override({
    setting: 'cpuLimit',
    parse: quantity,
    fallback: (c) => c.proxy.resources.cpu.limit,
    describe: text,
    help: 'e.g. 1',
  }),
  'proxy-memory-request': override({
    setting: 'memoryRequest',
    parse: quantity,
    fallback: (c) => c.proxy.resources.memory.request,
    describe: text,
    help: 'e.g. 20Mi',
  }),
  'proxy-memory-limit': override({
    setting: 'memoryLimit',
    parse: quantity,
    fallback: (c) => c.proxy.resources.memory.limit,
    describe: text,
    help: 'e.g. 250Mi',
  }),
  'proxy-enable-native-sidecar': override({
    setting: 'nativeSidecar',
    parse: (field, value) => parseBoolean(field, value),
    fallback: (c) => c.proxy.nativeSidecar,
    describe: String,
    help: 'true (init container with restartPolicy Always) or false (classic sidecar)',
  }),
  /** What the pod's ports admit when no Server selects them; the proxy's default until the controller answers. */
  'default-inbound-policy': override({
    setting: 'defaultInboundPolicy',
    parse(field, value): DefaultInboundPolicy {
      const t = value.trim();
      if (!(DEFAULT_INBOUND_POLICIES as readonly string[]).includes(t))
        throw new ConfigError(field, value, `one of ${DEFAULT_INBOUND_POLICIES.join(', ')}`);
      return t as DefaultInboundPolicy;
    },
    fallback: (c) => c.proxy.defaultInboundPolicy,
    describe: text,
    help: 'what the pod admits when no Server selects a port: all-unauthenticated, all-authenticated, cluster-unauthenticated, cluster-authenticated, deny, audit',
  }),
};

export type OverrideName = keyof typeof OVERRIDES;

/** The override settings, by their name after the `config.minimesh.io/` prefix, in the table's order. */
export const OVERRIDE_NAMES = Object.keys(OVERRIDES) as OverrideName[];

/** The settings a patch is built from, after overrides: one field per row of OVERRIDES. */
export type InjectSettings = {
  [N in OverrideName as (typeof OVERRIDES)[N]['setting']]: ReturnType<(typeof OVERRIDES)[N]['fallback']>;
};

/** The row with its value type erased, for the loops that walk every row. */
type AnyOverride = Override<keyof InjectSettings, unknown>;
const row = (name: OverrideName): AnyOverride => OVERRIDES[name] as AnyOverride;

/**
 * Parses one override value. Throws ConfigError whose field is the annotation name.
 * The CLI uses this to validate its flags strictly; the patch uses it leniently (warn and fall back).
 */
export function parseOverride(name: OverrideName, value: string, ctx: ParseContext = {}): unknown {
  return row(name).parse(`${ANNOTATIONS.configPrefix}${name}`, value, ctx);
}

/** Ports, ranges or names of the pod's container ports ("3306,db,5000-5010"). */
function parseOpaquePorts(field: string, value: string, ctx: ParseContext): PortRange[] {
  const numeric: string[] = [];
  const named: PortRange[] = [];
  for (const item of value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    if (/^[a-z][a-z0-9-]*$/.test(item)) {
      const port = ctx.namedPorts?.get(item);
      if (port === undefined)
        throw new ConfigError(field, item, "a port, a range lo-hi, or the name of one of the pod's container ports");
      named.push({ lo: port, hi: port });
    } else {
      numeric.push(item);
    }
  }
  return [...parsePortRanges(field, numeric.join(',')), ...named].sort((a, b) => a.lo - b.lo);
}

export interface ResolveInput {
  config: MeshConfig;
  podAnnotations: StringMap;
  namespaceAnnotations: StringMap;
  /** Already validated values (CLI flags), highest precedence. */
  overrides?: Partial<Record<OverrideName, string>>;
  containers: readonly Container[];
}

/** Applies the override layers to the configuration. Returns the settings and the warnings. */
export function resolveSettings(input: ResolveInput): { settings: InjectSettings; warnings: string[] } {
  const { config } = input;
  const ctx: ParseContext = { namedPorts: namedPorts(input.containers) };
  const layers: { where: string; values: StringMap }[] = [
    { where: 'flag', values: prefixed(input.overrides ?? {}) },
    { where: 'pod annotation', values: input.podAnnotations },
    { where: 'namespace annotation', values: input.namespaceAnnotations },
  ];
  const settings: Partial<Record<keyof InjectSettings, unknown>> = {};
  const warnings: string[] = [];
  for (const name of OVERRIDE_NAMES) {
    const r = row(name);
    const key = `${ANNOTATIONS.configPrefix}${name}`;
    const problems: { where: string; err: ConfigError }[] = [];
    let found = false;
    for (const layer of layers) {
      const raw = layer.values[key];
      if (raw === undefined) continue;
      try {
        settings[r.setting] = r.parse(key, raw, ctx);
        found = true;
        break;
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        problems.push({ where: layer.where, err });
      }
    }
    if (!found) settings[r.setting] = r.fallback(config);
    const used = r.describe(settings[r.setting]);
    for (const { where, err } of problems)
      warnings.push(`${err.message} (${where} ignored; using ${used === '' ? 'none' : `"${used}"`})`);
  }
  return { settings: settings as InjectSettings, warnings };
}

function prefixed(values: Partial<Record<OverrideName, string>>): StringMap {
  const out: StringMap = {};
  for (const [k, v] of Object.entries(values)) if (v !== undefined) out[`${ANNOTATIONS.configPrefix}${k}`] = v;
  return out;
}

function namedPorts(containers: readonly Container[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const c of containers) for (const p of c.ports ?? []) if (p.name) out.set(p.name, p.containerPort);
  return out;
}
