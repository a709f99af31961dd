// Whether minimesh-cni writes rules for a pod, and which: pure, from the pod as the API server
// returns it. A pod gets rules when it has the proxy and no proxy-init (the injector's CNI mode);
// the rules are exactly those of the proxy-init arguments the injector recorded on it, parsed by
// proxy-init's own parser (rule flags only), so both modes write the same rules.
import { ANNOTATIONS, CONTAINER_NAMES } from '@minimesh/config';
import { parseRuleArgs, type RuleCommand } from '@minimesh/proxy-init';
import { CniError } from '../errors.js';

/** The slice of a v1.Pod the decision reads. */
export interface PodLike {
  metadata?: { name?: string; namespace?: string; uid?: string; annotations?: Record<string, string> };
  spec?: {
    hostNetwork?: boolean;
    nodeName?: string;
    containers?: { name: string }[];
    initContainers?: { name: string }[];
  };
}

export type PodDecision = { kind: 'skip'; reason: string } | { kind: 'apply'; args: string[]; rules: RuleCommand };

export function decideForPod(pod: PodLike): PodDecision {
  const id = `pod ${pod.metadata?.namespace ?? '?'}/${pod.metadata?.name ?? '?'}`;
  if (pod.spec?.hostNetwork === true) return { kind: 'skip', reason: 'it uses the host network' };
  const names = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].map((c) => c.name);
  if (!names.includes(CONTAINER_NAMES.proxy)) return { kind: 'skip', reason: `it has no ${CONTAINER_NAMES.proxy}` };
  if (names.includes(CONTAINER_NAMES.init))
    return { kind: 'skip', reason: `its ${CONTAINER_NAMES.init} container writes its rules (init-container mode)` };
  const raw = pod.metadata?.annotations?.[ANNOTATIONS.proxyInitArgs];
  if (raw === undefined)
    throw new CniError(
      'MINIMESH_CNI_POD',
      `${id} has ${CONTAINER_NAMES.proxy} but neither ${CONTAINER_NAMES.init} nor the ${ANNOTATIONS.proxyInitArgs} annotation: ` +
        `it was not injected by a minimesh injector in CNI mode (cni.enabled=true), so minimesh-cni does not know its rules; ` +
        `re-create it through the injector`,
    );
  let args: unknown;
  try {
    args = JSON.parse(raw);
  } catch {
    args = undefined;
  }
  if (!Array.isArray(args) || !args.every((a) => typeof a === 'string'))
    throw new CniError(
      'MINIMESH_CNI_POD',
      `${id}: annotation ${ANNOTATIONS.proxyInitArgs} ${JSON.stringify(raw.slice(0, 200))} is not valid: expected a JSON list of proxy-init arguments`,
    );
  try {
    return { kind: 'apply', args: args as string[], rules: parseRuleArgs(args as string[]) };
  } catch (err) {
    throw new CniError(
      'MINIMESH_CNI_POD',
      `${id}: annotation ${ANNOTATIONS.proxyInitArgs}: ${(err as Error).message.replace(/^proxy-init arguments: /, '')}`,
      { cause: err },
    );
  }
}
