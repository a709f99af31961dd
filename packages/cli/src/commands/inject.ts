// minimesh inject [FILE|-]: as `linkerd inject`, marks every workload of a manifest for the webhook
// (minimesh.io/inject: enabled, and each override flag as its config.minimesh.io/ annotation), so the
// webhook injects the control plane's current proxy whenever a pod is created. With --manual it adds
// proxy-init and the proxy itself, with the patch function the webhook uses, at the pod template's path
// (and then needs the trust anchors).
import { readFileSync } from 'node:fs';
import jsonpatch from 'fast-json-patch';
import { ANNOTATIONS, ConfigError, type MeshConfig } from '@minimesh/config';
import {
  OVERRIDE_NAMES,
  OVERRIDES,
  createPatch,
  loadMeshConfig,
  parseOverride,
  pointer,
  prefixPatch,
  type OverrideName,
  type PatchOperation,
  type PodLike,
} from '@minimesh/injector';
import { parseFlags, UsageError, type FlagSpecs } from '@minimesh/runtime';
import type { CommandIO } from '../io.js';
import { readInput } from '../io.js';
import {
  TEMPLATE_PATHS,
  describeObject,
  formatManifests,
  getAt,
  mapObjects,
  parseManifests,
  type KubeObject,
} from '../manifest.js';

const info = {
  name: 'minimesh inject',
  summary:
    'add the minimesh proxy to the workloads of a YAML manifest (Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob)',
  usage:
    'minimesh inject [--manual --trust-anchors ca.crt] [flags] [FILE|-]   (reads stdin when FILE is "-" or absent; writes stdout)',
};

export const injectFlags = {
  manual: {
    type: 'boolean',
    description:
      'add proxy-init and the proxy here instead of leaving it to the webhook (needs --trust-anchors or a --config with them)',
  },
  config: {
    type: 'string',
    description: 'mesh configuration file (JSON or YAML), as the chart renders it (with --manual)',
  },
  'trust-anchors': {
    type: 'string',
    description: 'PEM file of the trust anchors, e.g. ca.crt from `minimesh certs create` (with --manual)',
  },
  ...Object.fromEntries(
    OVERRIDE_NAMES.map((n) => [n, { type: 'string', description: `${OVERRIDES[n].help} (config.minimesh.io/${n})` }]),
  ),
} as FlagSpecs;

/** Validates the override flags as strictly as the CLI should: a bad value exits 2. */
export function toOverrides(values: Record<string, unknown>): Partial<Record<OverrideName, string>> {
  const out: Partial<Record<OverrideName, string>> = {};
  for (const name of OVERRIDE_NAMES) {
    const v = values[name];
    if (typeof v !== 'string' || v === '') continue;
    try {
      // Port names in opaque-ports resolve per pod; accept them here, check the rest.
      const checkable =
        name === 'opaque-ports'
          ? v
              .split(',')
              .filter((s) => !/^[a-z][a-z0-9-]*$/.test(s.trim()))
              .join(',')
          : v;
      if (checkable !== '' || name !== 'opaque-ports') parseOverride(name, checkable);
    } catch (err) {
      if (err instanceof ConfigError)
        throw new UsageError(`--${name}: ${JSON.stringify(v)} is not valid: expected ${err.expected}`, { cause: err });
      throw err;
    }
    out[name] = v;
  }
  return out;
}

export function loadInjectConfig(configFile: string, anchorsFile: string): MeshConfig {
  let config: MeshConfig;
  try {
    config = loadMeshConfig(configFile);
  } catch (err) {
    throw new UsageError(`--config: ${(err as Error).message}`, { cause: err });
  }
  if (anchorsFile) {
    let pem: string;
    try {
      pem = readFileSync(anchorsFile, 'utf8');
    } catch (err) {
      throw new UsageError(`--trust-anchors: cannot read ${anchorsFile}: ${(err as Error).message}`, { cause: err });
    }
    if (!pem.includes('-----BEGIN CERTIFICATE-----'))
      throw new UsageError(`--trust-anchors: ${anchorsFile} has no PEM certificate`);
    config = { ...config, identityTrustAnchorsPEM: pem };
  }
  return config;
}

export interface InjectReport {
  lines: string[];
}

/** Pods that run to completion (Jobs, CronJobs, and pods with restartPolicy Never/OnFailure). */
function runsToCompletion(obj: KubeObject, template: PodLike): boolean {
  if (obj.kind === 'Job' || obj.kind === 'CronJob') return true;
  const policy = (template.spec as { restartPolicy?: string } | undefined)?.restartPolicy;
  return policy === 'Never' || policy === 'OnFailure';
}

/**
 * Injects one object (pure apart from the report). mode 'annotate' (the default) adds only the inject
 * annotation and the overrides as annotations; 'manual' adds the containers too. Exported for tests.
 */
export function injectObject(
  obj: KubeObject,
  config: MeshConfig,
  overrides: Partial<Record<OverrideName, string>>,
  report: InjectReport,
  mode: 'annotate' | 'manual' = 'manual',
): KubeObject {
  const path = TEMPLATE_PATHS[obj.kind ?? ''];
  const what = describeObject(obj);
  if (!path) return obj;
  const template = getAt(obj, path) as PodLike | undefined;
  if (typeof template !== 'object' || template === null) {
    report.lines.push(`${what} skipped: it has no pod template at ${pointer(...path) || '/'}`);
    return obj;
  }
  const prefix = path.length > 0 ? pointer(...path) : '';
  // Mark the template as opted in (unless it says disabled); in annotate mode, the overrides too.
  const mark: PatchOperation[] = [];
  const annotations = template.metadata?.annotations;
  const wanted: Record<string, string> = {};
  if (annotations?.[ANNOTATIONS.inject] !== 'disabled') wanted[ANNOTATIONS.inject] = 'enabled';
  if (mode === 'annotate')
    for (const [name, value] of Object.entries(overrides)) wanted[`${ANNOTATIONS.configPrefix}${name}`] = value;
  if (Object.keys(wanted).length > 0) {
    if (template.metadata === undefined) mark.push({ op: 'add', path: '/metadata', value: {} });
    if (annotations === undefined) mark.push({ op: 'add', path: '/metadata/annotations', value: {} });
    for (const [key, value] of Object.entries(wanted))
      mark.push({ op: 'add', path: pointer('metadata', 'annotations', key), value });
  }
  const marked = jsonpatch.applyPatch(structuredClone(obj), prefixPatch(mark, prefix), true, false).newDocument;
  const result = createPatch(getAt(marked, path) as PodLike, {
    config,
    namespace: obj.metadata?.namespace,
    ...(mode === 'manual' ? { overrides } : {}),
  });
  if (result.skipped) {
    report.lines.push(`${what} skipped: ${result.skipped.message}`);
    return obj;
  }
  const classic =
    mode === 'manual'
      ? (overrides['proxy-enable-native-sidecar'] ?? String(config.proxy.nativeSidecar))
      : (getAt(marked, [
          ...path,
          'metadata',
          'annotations',
          `${ANNOTATIONS.configPrefix}proxy-enable-native-sidecar`,
        ]) as string | undefined);
  if (classic === 'false' && runsToCompletion(obj, template) && !config.proxy.enableShutdownEndpoint)
    throw new UsageError(
      `minimesh inject: ${what}: the classic sidecar (proxy-enable-native-sidecar false) never exits, so this pod would never complete: keep the native sidecar (the default), or enable the proxy's shutdown endpoint (proxy.enableShutdownEndpoint) and have the job POST http://localhost:${config.proxy.ports.admin}/shutdown when it is done`,
    );
  // The empty-trust-anchor warning is about the containers, which only --manual adds.
  for (const w of result.warnings)
    if (mode === 'manual' || !w.startsWith('identityTrustAnchorsPEM')) report.lines.push(`warning: ${what}: ${w}`);
  if (mode === 'annotate') {
    report.lines.push(`${what} annotated (the webhook injects its pods)`);
    return marked;
  }
  report.lines.push(`${what} injected`);
  return jsonpatch.applyPatch(marked, prefixPatch(result.patch, prefix), true, false).newDocument;
}

export async function injectCommand(argv: string[], io: CommandIO): Promise<number> {
  const parsed = parseFlags(info, injectFlags, argv);
  if ('help' in parsed) {
    io.stdout.write(parsed.help);
    return 0;
  }
  const values = parsed.values as Record<string, string | boolean>;
  const manual = values.manual === true;
  const configFile = (values.config as string | undefined) ?? '';
  const anchorsFile = (values['trust-anchors'] as string | undefined) ?? '';
  if (!manual && (configFile !== '' || anchorsFile !== ''))
    throw new UsageError(
      `minimesh inject: --${configFile !== '' ? 'config' : 'trust-anchors'} only matters with --manual (without it, the webhook injects with the control plane's configuration)`,
    );
  const overrides = toOverrides(values);
  const config = loadInjectConfig(configFile, anchorsFile);
  if (manual && config.identityTrustAnchorsPEM.trim() === '')
    throw new UsageError(
      'minimesh inject: --manual needs the trust anchors: pass --trust-anchors ca.crt (or a --config that has identityTrustAnchorsPEM)',
    );
  const { text, source } = await readInput(parsed.positionals, io, 'minimesh inject');
  const objects = parseManifests(text, source);
  const report: InjectReport = { lines: [] };
  const out = mapObjects(objects, (o) => injectObject(o, config, overrides, report, manual ? 'manual' : 'annotate'));
  io.stdout.write(formatManifests(out));
  if (report.lines.length > 0) io.stderr.write(`${report.lines.join('\n')}\n`);
  return 0;
}
