// Whether a pod gets the mesh: the inject annotation (pod first, then its namespace), and the pods
// that are never injected (already injected, hostNetwork, the control plane's own).
import { ANNOTATIONS, CONTAINER_NAMES, LABELS, type MeshConfig } from '@minimesh/config';
import type { PodLike, SkipReason, StringMap } from './types.js';

/** Namespaces whose pods are never injected (the cluster's own components). */
export const SYSTEM_NAMESPACES: readonly string[] = ['kube-system', 'kube-public', 'kube-node-lease'];

export type InjectDecision = { inject: true } | { inject: false; reason: SkipReason; message: string };

export function isInjected(pod: PodLike): boolean {
  const names: string[] = [CONTAINER_NAMES.init, CONTAINER_NAMES.validator, CONTAINER_NAMES.proxy];
  const all = [...asArray(pod.spec?.initContainers), ...asArray(pod.spec?.containers)];
  return all.some((c) => names.includes((c as { name?: string }).name ?? ''));
}

export function isControlPlanePod(pod: PodLike, namespace: string | undefined, config: MeshConfig): boolean {
  const labels = pod.metadata?.labels ?? {};
  // Injected workloads carry minimesh.io/control-plane-ns too, so that label says nothing here.
  return (
    labels[LABELS.isControlPlane] !== undefined ||
    labels[LABELS.controlPlaneComponent] !== undefined ||
    (namespace !== undefined && namespace === config.controlPlaneNamespace)
  );
}

export function decideInjection(
  pod: PodLike,
  opts: { namespace: string | undefined; namespaceAnnotations: StringMap; config: MeshConfig },
): InjectDecision {
  const podValue = pod.metadata?.annotations?.[ANNOTATIONS.inject];
  const nsValue = opts.namespaceAnnotations[ANNOTATIONS.inject];
  const [value, where] = podValue !== undefined ? [podValue, 'pod'] : [nsValue, 'namespace'];
  if (value === 'disabled') {
    return {
      inject: false,
      reason: 'injection-disabled',
      message: `${ANNOTATIONS.inject} is "disabled" on the ${where}`,
    };
  }
  if (value !== undefined && value !== 'enabled') {
    return {
      inject: false,
      reason: 'invalid-inject-annotation',
      message: `${ANNOTATIONS.inject}: ${JSON.stringify(value)} on the ${where} is not valid: expected "enabled" or "disabled"; the pod was not injected`,
    };
  }
  if (value === undefined) {
    return {
      inject: false,
      reason: 'not-enabled',
      message: `neither the pod nor its namespace has ${ANNOTATIONS.inject}: enabled`,
    };
  }
  if (isInjected(pod)) {
    return {
      inject: false,
      reason: 'already-injected',
      message: `the pod already has ${CONTAINER_NAMES.init} or ${CONTAINER_NAMES.proxy}`,
    };
  }
  if (pod.spec?.hostNetwork === true) {
    return {
      inject: false,
      reason: 'host-network',
      message: "the pod uses hostNetwork; its iptables rules would be the node's",
    };
  }
  // Kubernetes' own namespaces are never meshed, whatever their annotations say: the chart's webhook
  // selector already leaves kube-system out; this holds when the selector is changed or the CLI injects.
  if (opts.namespace !== undefined && SYSTEM_NAMESPACES.includes(opts.namespace)) {
    return {
      inject: false,
      reason: 'system-namespace',
      message: `pods in ${opts.namespace} are never injected`,
    };
  }
  if (isControlPlanePod(pod, opts.namespace, opts.config)) {
    return {
      inject: false,
      reason: 'control-plane',
      message: 'control-plane pods get their proxy from the chart, not the injector',
    };
  }
  return { inject: true };
}

function asArray(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}
