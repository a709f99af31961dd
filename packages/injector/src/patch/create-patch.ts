// The injector's pure core: (pod, namespace annotations, mesh config, overrides) → JSON patch.
// Used by the webhook for pods and by `minimesh inject` for pod templates (prefixPatch).
import { createHash } from 'node:crypto';
import { ANNOTATIONS, LABELS, MINIMESH_VERSION, type MeshConfig } from '@minimesh/config';
import { InjectorError } from '../errors.js';
import { decideInjection } from './decide.js';
import { pointer } from './json-pointer.js';
import { resolveSettings, type OverrideName } from './overrides.js';
import { buildProxyContainer } from './proxy-container.js';
import { buildProxyInitContainer, toProxyInitArgs } from './proxy-init-container.js';
import { buildValidatorContainer } from './validator-container.js';
import type { Container, PatchOperation, PatchResult, PodLike, StringMap } from './types.js';
import { buildVolumes } from './volumes.js';

export const CREATED_BY = `minimesh/injector ${MINIMESH_VERSION}`;

export interface CreatePatchOptions {
  config: MeshConfig;
  /** The pod's namespace (AdmissionReview request.namespace); falls back to metadata.namespace. */
  namespace?: string;
  /** Annotations of the pod's Namespace object. */
  namespaceAnnotations?: StringMap;
  /** Validated overrides that win over every annotation (the CLI's flags). */
  overrides?: Partial<Record<OverrideName, string>>;
}

export function trustRootSha256(pem: string): string {
  return createHash('sha256').update(pem).digest('hex');
}

/** The JSON patch that meshes the pod, or why it is left alone. Never mutates its input. */
export function createPatch(pod: PodLike, opts: CreatePatchOptions): PatchResult {
  const { config } = opts;
  const namespace = opts.namespace || pod.metadata?.namespace || undefined;
  const namespaceAnnotations = opts.namespaceAnnotations ?? {};
  const decision = decideInjection(pod, { namespace, namespaceAnnotations, config });
  if (!decision.inject) {
    return { patch: [], skipped: { reason: decision.reason, message: decision.message }, warnings: [] };
  }
  const spec = pod.spec;
  if (!spec || !Array.isArray(spec.containers)) {
    throw new InjectorError('MINIMESH_INJECTOR_BAD_POD', 'pod: spec.containers is missing or not a list');
  }
  for (const key of ['initContainers', 'volumes'] as const) {
    if (spec[key] !== undefined && !Array.isArray(spec[key])) {
      throw new InjectorError('MINIMESH_INJECTOR_BAD_POD', `pod: spec.${key} is not a list`);
    }
  }
  const containers: Container[] = spec.containers;
  const { settings, warnings } = resolveSettings({
    config,
    podAnnotations: pod.metadata?.annotations ?? {},
    namespaceAnnotations,
    overrides: opts.overrides,
    containers,
  });
  if (config.identityTrustAnchorsPEM.trim() === '') {
    warnings.push(
      'identityTrustAnchorsPEM is empty in the mesh configuration: the proxy cannot verify peers or obtain an identity',
    );
  }

  const native = settings.nativeSidecar;
  const proxy = buildProxyContainer({ config, settings, inboundPorts: inboundPortsOf(containers), native });
  // CNI mode: minimesh-cni writes the rules from the arguments recorded here, and the pod's first
  // init container only checks that it did; otherwise proxy-init writes them itself.
  const cni = config.cni.enabled;
  const init = cni ? buildValidatorContainer(config, settings) : buildProxyInitContainer(config, settings);

  const ops: PatchOperation[] = [];
  if (pod.metadata === undefined || pod.metadata === null) ops.push({ op: 'add', path: '/metadata', value: {} });
  const annotations: StringMap = {
    [ANNOTATIONS.createdBy]: CREATED_BY,
    [ANNOTATIONS.proxyVersion]: settings.proxyVersion,
    [ANNOTATIONS.trustRootSha256]: trustRootSha256(config.identityTrustAnchorsPEM),
  };
  if (cni) annotations[ANNOTATIONS.proxyInitArgs] = JSON.stringify(toProxyInitArgs(config, settings));
  // A namespace's default inbound policy is copied onto its pods (as Linkerd inherits namespace config
  // annotations), so the policy controller, which reads pods, computes the same default the proxy has.
  const podPolicy = pod.metadata?.annotations?.[ANNOTATIONS.defaultInboundPolicy];
  if (podPolicy === undefined && namespaceAnnotations[ANNOTATIONS.defaultInboundPolicy] !== undefined)
    annotations[ANNOTATIONS.defaultInboundPolicy] = settings.defaultInboundPolicy;
  const labels: StringMap = { [LABELS.controlPlaneNs]: config.controlPlaneNamespace };
  if (namespace !== undefined) labels[LABELS.workloadNs] = namespace;
  addMapEntries(ops, 'annotations', pod.metadata?.annotations, annotations);
  addMapEntries(ops, 'labels', pod.metadata?.labels, labels);

  if (spec.initContainers === undefined) ops.push({ op: 'add', path: '/spec/initContainers', value: [] });
  ops.push({ op: 'add', path: pointer('spec', 'initContainers', 0), value: init });
  if (native) ops.push({ op: 'add', path: pointer('spec', 'initContainers', 1), value: proxy });
  else ops.push({ op: 'add', path: pointer('spec', 'containers', 0), value: proxy });

  if (spec.volumes === undefined) ops.push({ op: 'add', path: '/spec/volumes', value: [] });
  for (const volume of buildVolumes(config)) ops.push({ op: 'add', path: '/spec/volumes/-', value: volume });

  return { patch: ops, warnings };
}

function addMapEntries(
  ops: PatchOperation[],
  field: 'annotations' | 'labels',
  existing: StringMap | undefined,
  entries: StringMap,
): void {
  if (existing === undefined || existing === null) ops.push({ op: 'add', path: pointer('metadata', field), value: {} });
  for (const [key, value] of Object.entries(entries)) {
    // "add" on an existing member replaces it (RFC 6902 §4.1).
    ops.push({ op: 'add', path: pointer('metadata', field, key), value });
  }
}

/** The app containers' TCP ports, sorted and unique: what the proxy treats as the pod's own ports. */
function inboundPortsOf(containers: readonly Container[]): number[] {
  const ports = new Set<number>();
  for (const c of containers) {
    for (const p of c.ports ?? []) {
      if ((p.protocol ?? 'TCP') === 'TCP' && Number.isInteger(p.containerPort)) ports.add(p.containerPort);
    }
  }
  return [...ports].sort((a, b) => a - b);
}
