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

/** The override settings, by their name after the `config.minimesh.io/` prefix. */
export const OVERRIDE_NAMES = [
  'proxy-image',
  'proxy-version',
  'skip-inbound-ports',
  'skip-outbound-ports',
  'skip-subnets',
  'proxy-uid',
  'proxy-log-level',
  'opaque-ports',
  'proxy-cpu-request',
  'proxy-cpu-limit',
  'proxy-memory-request',
  'proxy-memory-limit',
  'proxy-enable-native-sidecar',
  'default-inbound-policy',
] as const;

export type OverrideName = (typeof OVERRIDE_NAMES)[number];

/** The settings a patch is built from, after overrides. */
export interface InjectSettings {
  proxyImage: string;
  proxyVersion: string;
  proxyUid: number;
  logLevel: LogLevel;
  /** Extra inbound ports never redirected (skip-inbound-ports); the config's list is always included. */
  skipInboundPorts: PortRange[];
  skipOutboundPorts: PortRange[];
  /** CIDR strings as given. */
  skipSubnets: string[];
  opaquePorts: PortRange[];
  cpuRequest: string;
  cpuLimit: string;
  memoryRequest: string;
  memoryLimit: string;
  nativeSidecar: boolean;
  /** What the pod's ports admit when no Server selects them; the proxy's default until the controller answers. */
  defaultInboundPolicy: DefaultInboundPolicy;
}

type Parsed = Partial<Record<OverrideName, unknown>>;

export interface ParseContext {
  /** Named container ports, for opaque-ports given by name. */
  namedPorts?: ReadonlyMap<string, number>;
}

const QUANTITY = /^\d+(\.\d+)?(m|Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?$/;
const IMAGE_NAME = /^[A-Za-z0-9][A-Za-z0-9._/:-]*$/;
const IMAGE_TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

/**
 * Parses one override value. Throws ConfigError whose field is the annotation name.
 * The CLI uses this to validate its flags strictly; the patch uses it leniently (warn and fall back).
 */
export function parseOverride(name: OverrideName, value: string, ctx: ParseContext = {}): unknown {
  const field = `${ANNOTATIONS.configPrefix}${name}`;
  switch (name) {
    case 'proxy-image': {
      const text = value.trim();
      const last = text.split('/').pop() ?? '';
      // 255: the longest repository name a registry accepts (distribution/reference's NameTotalLengthMax).
      if (text.length > 255 || !IMAGE_NAME.test(text) || last.includes(':') || text.includes('@')) {
        throw new ConfigError(field, value, `an image name without tag or digest (the tag comes from proxy-version)`);
      }
      return text;
    }
    case 'proxy-version': {
      const text = value.trim();
      if (!IMAGE_TAG.test(text)) throw new ConfigError(field, value, 'an image tag such as 0.1.0');
      return text;
    }
    case 'skip-inbound-ports':
    case 'skip-outbound-ports':
      return parsePortRanges(field, value);
    case 'skip-subnets':
      return parseCidrList(field, value).map((c) => `${c.address}/${c.prefix}`);
    case 'proxy-uid': {
      const text = value.trim();
      const n = /^\d+$/.test(text) ? Number(text) : NaN;
      if (!(n >= 1 && n <= 2147483647)) throw new ConfigError(field, value, 'a non-root user id 1-2147483647');
      return n;
    }
    case 'proxy-log-level':
      return parseLogLevel(field, value);
    case 'opaque-ports':
      return parseOpaquePorts(field, value, ctx);
    case 'proxy-cpu-request':
    case 'proxy-cpu-limit':
    case 'proxy-memory-request':
    case 'proxy-memory-limit': {
      const text = value.trim();
      if (!QUANTITY.test(text)) throw new ConfigError(field, value, 'a Kubernetes quantity such as 100m, 20Mi or 1');
      return text;
    }
    case 'proxy-enable-native-sidecar':
      return parseBoolean(field, value);
    case 'default-inbound-policy': {
      const text = value.trim();
      if (!(DEFAULT_INBOUND_POLICIES as readonly string[]).includes(text))
        throw new ConfigError(field, value, `one of ${DEFAULT_INBOUND_POLICIES.join(', ')}`);
      return text;
    }
  }
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
  const parsed: Parsed = {};
  const problems: { name: OverrideName; where: string; err: ConfigError }[] = [];
  for (const name of OVERRIDE_NAMES) {
    const key = `${ANNOTATIONS.configPrefix}${name}`;
    for (const layer of layers) {
      const raw = layer.values[key];
      if (raw === undefined) continue;
      try {
        parsed[name] = parseOverride(name, raw, ctx);
        break;
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        problems.push({ name, where: layer.where, err });
      }
    }
  }
  const p = parsed as {
    'proxy-image'?: string;
    'proxy-version'?: string;
    'skip-inbound-ports'?: PortRange[];
    'skip-outbound-ports'?: PortRange[];
    'skip-subnets'?: string[];
    'proxy-uid'?: number;
    'proxy-log-level'?: LogLevel;
    'opaque-ports'?: PortRange[];
    'proxy-cpu-request'?: string;
    'proxy-cpu-limit'?: string;
    'proxy-memory-request'?: string;
    'proxy-memory-limit'?: string;
    'proxy-enable-native-sidecar'?: boolean;
    'default-inbound-policy'?: DefaultInboundPolicy;
  };
  const settings: InjectSettings = {
    proxyImage: p['proxy-image'] ?? config.proxy.image.name,
    proxyVersion: p['proxy-version'] ?? config.proxy.image.version,
    proxyUid: p['proxy-uid'] ?? config.proxy.uid,
    logLevel: p['proxy-log-level'] ?? config.proxy.logLevel,
    skipInboundPorts: p['skip-inbound-ports'] ?? [],
    skipOutboundPorts: p['skip-outbound-ports'] ?? [],
    skipSubnets: p['skip-subnets'] ?? [],
    opaquePorts: p['opaque-ports'] ?? parsePortRanges('proxy.opaquePorts', config.proxy.opaquePorts),
    cpuRequest: p['proxy-cpu-request'] ?? config.proxy.resources.cpu.request,
    cpuLimit: p['proxy-cpu-limit'] ?? config.proxy.resources.cpu.limit,
    memoryRequest: p['proxy-memory-request'] ?? config.proxy.resources.memory.request,
    memoryLimit: p['proxy-memory-limit'] ?? config.proxy.resources.memory.limit,
    nativeSidecar: p['proxy-enable-native-sidecar'] ?? config.proxy.nativeSidecar,
    defaultInboundPolicy: p['default-inbound-policy'] ?? config.proxy.defaultInboundPolicy,
  };
  const warnings = problems.map(
    ({ name, where, err }) => `${err.message} (${where} ignored; using ${describe(settings, name)})`,
  );
  return { settings, warnings };
}

function describe(s: InjectSettings, name: OverrideName): string {
  const v = ((): string => {
    switch (name) {
      case 'proxy-image':
        return s.proxyImage;
      case 'proxy-version':
        return s.proxyVersion;
      case 'skip-inbound-ports':
        return formatPortRanges(s.skipInboundPorts);
      case 'skip-outbound-ports':
        return formatPortRanges(s.skipOutboundPorts);
      case 'skip-subnets':
        return s.skipSubnets.join(',');
      case 'proxy-uid':
        return String(s.proxyUid);
      case 'proxy-log-level':
        return s.logLevel;
      case 'opaque-ports':
        return formatPortRanges(s.opaquePorts);
      case 'proxy-cpu-request':
        return s.cpuRequest;
      case 'proxy-cpu-limit':
        return s.cpuLimit;
      case 'proxy-memory-request':
        return s.memoryRequest;
      case 'proxy-memory-limit':
        return s.memoryLimit;
      case 'proxy-enable-native-sidecar':
        return String(s.nativeSidecar);
      case 'default-inbound-policy':
        return s.defaultInboundPolicy;
    }
  })();
  return v === '' ? 'none' : `"${v}"`;
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
