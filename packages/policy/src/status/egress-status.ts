// The status.conditions an EgressNetwork should carry, and whether it carries them already. minimesh
// owns two condition types and keeps every other one as it is:
// - Accepted: True (reason Accepted) when the EgressNetwork is in force; False (UnsupportedValue) when
//   it cannot be used (a malformed object the schema did not stop: an invalid CIDR or traffic policy).
// - ClusterNetworksExcluded: True (reason EgressReasonNetworkOverlap, Linkerd's reason) when its
//   networks reach into the cluster networks, naming them: traffic to the cluster networks is never
//   egress, the EgressNetwork applies to the rest. Absent otherwise.
// Linkerd writes Accepted=False EgressReasonNetworkOverlap ("networks overlap with clusterNetworks")
// instead and then refuses routes on it (NoMatchingParent), while its index still classifies traffic
// with it (linkerd2 edge-26.8.3, policy-controller/k8s/status/src/index.rs, read on 2026-11-28); minimesh
// keeps one answer for both: in force for the addresses outside the cluster networks, and says so.
// Pure: the writer (status-writer.ts) sends what this computes.
import type { ResourceStore } from '../index/store.js';
import { isObject, type Json } from '../resources/fields.js';
import { RESOURCE_KINDS } from '../resources/kinds.js';

export const EGRESS_CONDITIONS = { accepted: 'Accepted', excluded: 'ClusterNetworksExcluded' } as const;
export const EGRESS_REASONS = {
  accepted: 'Accepted',
  invalid: 'UnsupportedValue',
  overlap: 'EgressReasonNetworkOverlap',
} as const;

export interface EgressCondition {
  type: string;
  status: 'True' | 'False';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

/** One EgressNetwork whose status.conditions must change. */
export interface EgressStatusUpdate {
  namespace: string;
  name: string;
  resourceVersion?: string;
  /** The whole new status.conditions: others' conditions, then minimesh's. */
  conditions: Json[];
  /** minimesh's conditions alone. */
  ours: EgressCondition[];
}

/** The API path of an EgressNetwork's status subresource. */
export function egressStatusPath(namespace: string, name: string): string {
  const k = RESOURCE_KINDS.EgressNetwork;
  return `/apis/${k.group}/${k.version}/namespaces/${namespace}/${k.plural}/${name}/status`;
}

const OWNED: readonly string[] = [EGRESS_CONDITIONS.accepted, EGRESS_CONDITIONS.excluded];

function existingConditions(object: unknown): Json[] {
  const status = isObject(object) && isObject(object.status) ? object.status : undefined;
  return Array.isArray(status?.conditions) ? status.conditions.filter(isObject) : [];
}

function comparable(list: readonly Json[]): string {
  return JSON.stringify(
    list
      .filter((c) => OWNED.includes(String(c.type)))
      .map((c) => [c.type, c.status, c.reason, c.message ?? '', c.observedGeneration ?? null])
      .sort((a, b) => (String(a[0]) < String(b[0]) ? -1 : 1)),
  );
}

function update(
  meta: { namespace: string; name: string; resourceVersion?: string },
  existing: Json[],
  ours: EgressCondition[],
): EgressStatusUpdate | undefined {
  for (const c of ours) {
    const old = existing.find((x) => x.type === c.type);
    if (old && old.status === c.status && typeof old.lastTransitionTime === 'string')
      c.lastTransitionTime = old.lastTransitionTime;
  }
  if (comparable(existing) === comparable(ours as unknown as Json[])) return undefined;
  return {
    namespace: meta.namespace,
    name: meta.name,
    ...(meta.resourceVersion ? { resourceVersion: meta.resourceVersion } : {}),
    conditions: [...existing.filter((c) => !OWNED.includes(String(c.type))), ...(ours as unknown as Json[])],
    ours,
  };
}

/** The EgressNetworks whose status must change, and what it must become (`now` stamps new transitions). */
export function egressStatusUpdates(store: ResourceStore, now: string): EgressStatusUpdate[] {
  const out: EgressStatusUpdate[] = [];
  for (const net of store.all('EgressNetwork')) {
    const gen = net.meta.generation !== undefined ? { observedGeneration: net.meta.generation } : {};
    const ours: EgressCondition[] = [
      {
        type: 'Accepted',
        status: 'True',
        reason: EGRESS_REASONS.accepted,
        message: '',
        lastTransitionTime: now,
        ...gen,
      },
    ];
    if (net.clusterOverlap.length > 0)
      ours.push({
        type: EGRESS_CONDITIONS.excluded,
        status: 'True',
        reason: EGRESS_REASONS.overlap,
        message: `networks reach into the cluster networks ${net.clusterOverlap.join(', ')}: traffic to them is never egress; this EgressNetwork applies to the rest`,
        lastTransitionTime: now,
        ...gen,
      });
    const u = update(net.meta, net.conditions, ours);
    if (u) out.push(u);
  }
  for (const bad of store.invalidEgressNetworks()) {
    const meta = isObject(bad.object) && isObject(bad.object.metadata) ? bad.object.metadata : {};
    const gen = typeof meta.generation === 'number' ? { observedGeneration: meta.generation } : {};
    const ours: EgressCondition[] = [
      {
        type: 'Accepted',
        status: 'False',
        reason: EGRESS_REASONS.invalid,
        message: bad.message,
        lastTransitionTime: now,
        ...gen,
      },
    ];
    const u = update(
      {
        namespace: bad.namespace,
        name: bad.name,
        ...(typeof meta.resourceVersion === 'string' ? { resourceVersion: meta.resourceVersion } : {}),
      },
      existingConditions(bad.object),
      ours,
    );
    if (u) out.push(u);
  }
  return out;
}
