// The proxy's policy settings, from the environment the injector writes (Linkerd's
// LINKERD2_PROXY_POLICY_* and _INBOUND_DEFAULT_POLICY with our prefix):
//   MINIMESH_PROXY_POLICY_SVC_ADDR / _NAME     the policy controller (optional: without it every port has
//                                              the default policy; linkerd2-proxy refuses to start then)
//   MINIMESH_PROXY_POLICY_WORKLOAD             JSON {"ns","pod"} (default: from the destination context)
//   MINIMESH_PROXY_INBOUND_DEFAULT_POLICY      all-unauthenticated (default), all-authenticated,
//                                              cluster-unauthenticated, cluster-authenticated, deny, audit
//   MINIMESH_PROXY_POLICY_CLUSTER_NETWORKS     what cluster-* admit (default: the private networks)
import {
  ConfigError,
  DEFAULT_INBOUND_POLICIES,
  PROXY_ENV,
  parseCidrList,
  type DefaultInboundPolicy,
} from '@minimesh/config';
import { controlAddr, type ControlAddr, type Env } from './control-addr.js';

export interface PolicyConfig {
  /** The policy controller; undefined: none configured. */
  controller: ControlAddr | undefined;
  /** JSON {"ns","pod"}. */
  workload: string;
  defaultPolicy: DefaultInboundPolicy;
  clusterNetworks: string[];
}

const DEFAULT_NETWORKS = '10.0.0.0/8,100.64.0.0/10,172.16.0.0/12,192.168.0.0/16,fd00::/8';

export function parsePolicyConfig(env: Env, destinationContext: string): PolicyConfig {
  const E = PROXY_ENV;
  const value = (name: string) => {
    const v = env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };
  const controller = value(E.policySvcAddr) ? controlAddr(env, E.policySvcAddr, E.policySvcName) : undefined;
  let workload = value(E.policyWorkload);
  if (workload === undefined) {
    // The destination context names the same pod: {"ns","nodeName","pod"}.
    try {
      const ctx = JSON.parse(destinationContext) as { ns?: string; pod?: string };
      if (ctx.ns && ctx.pod) workload = JSON.stringify({ ns: ctx.ns, pod: ctx.pod });
    } catch {
      /* not JSON: no default */
    }
  }
  if (controller && workload === undefined)
    throw new ConfigError(E.policyWorkload, '', 'JSON {"ns":"<namespace>","pod":"<pod>"} naming this pod');
  if (workload !== undefined) {
    let ok = false;
    try {
      const w = JSON.parse(workload) as { ns?: unknown; pod?: unknown; external_workload?: unknown };
      ok = typeof w.ns === 'string' && (typeof w.pod === 'string' || typeof w.external_workload === 'string');
    } catch {
      ok = /^[^:]+:[^:]+$/.test(workload);
    }
    if (!ok) throw new ConfigError(E.policyWorkload, workload, 'JSON {"ns":"<namespace>","pod":"<pod>"}');
  }
  const dp = value(E.inboundDefaultPolicy) ?? 'all-unauthenticated';
  if (!(DEFAULT_INBOUND_POLICIES as readonly string[]).includes(dp))
    throw new ConfigError(E.inboundDefaultPolicy, dp, `one of ${DEFAULT_INBOUND_POLICIES.join(', ')}`);
  const clusterNetworks = parseCidrList(
    E.policyClusterNetworks,
    value(E.policyClusterNetworks) ?? DEFAULT_NETWORKS,
  ).map((c) => `${c.address}/${c.prefix}`);
  return { controller, workload: workload ?? '', defaultPolicy: dp as DefaultInboundPolicy, clusterNetworks };
}
