// EgressNetwork (policy.minimesh.io/v1alpha1, Linkerd's policy.linkerd.io kind, Linkerd 2.17+): a set of
// destinations outside the cluster (`networks`: CIDRs minus `except`; absent or empty: everything
// outside the cluster networks) and what happens to traffic to them that no route attached to it
// describes (`trafficPolicy`: Allow or Deny). The CRD's schema refuses an invalid CIDR and any other
// traffic policy; this parser refuses them too, for objects that got in some other way.
import { cidrContains, cidrNetwork, parseCidr, type Cidr } from '@minimesh/config';
import { arr, FieldError, isObject, obj, objectMeta, str, type Json, type ObjectMeta } from './fields.js';

export const TRAFFIC_POLICIES = ['Allow', 'Deny'] as const;
export type TrafficPolicy = (typeof TRAFFIC_POLICIES)[number];

export interface EgressNet {
  cidr: Cidr;
  except: Cidr[];
}

export interface EgressNetworkSpec {
  meta: ObjectMeta;
  trafficPolicy: TrafficPolicy;
  /** The networks as written; empty when the spec names none (everything outside the cluster networks). */
  networks: EgressNet[];
  /**
   * Cluster networks that the written networks reach into (not excepted): the cluster part is never
   * egress (only addresses outside the cluster networks are classified), and the status says so.
   */
  clusterOverlap: string[];
  /** status.conditions as the object carries them (the status writer compares against them). */
  conditions: Json[];
}

function cidr(v: unknown, path: string): Cidr {
  const s = str(v, path);
  try {
    return parseCidr(path, s);
  } catch {
    throw new FieldError(path, 'a CIDR such as 203.0.113.0/24 or 2001:db8::/32', v);
  }
}

/** Whether two CIDRs share an address (one contains the other's network). */
export function cidrsIntersect(a: Cidr, b: Cidr): boolean {
  if (a.family !== b.family) return false;
  return cidrContains(a, cidrNetwork(b)) === true || cidrContains(b, cidrNetwork(a)) === true;
}

/** Whether `inner` lies wholly inside `outer`. */
function cidrCovers(outer: Cidr, inner: Cidr): boolean {
  return (
    outer.family === inner.family && outer.prefix <= inner.prefix && cidrContains(outer, cidrNetwork(inner)) === true
  );
}

export function parseEgressNetwork(o: unknown, clusterNetworks: readonly string[]): EgressNetworkSpec {
  const meta = objectMeta(o, 'EgressNetwork');
  const spec = obj((o as { spec?: unknown }).spec, 'spec');
  const tp = spec.trafficPolicy;
  if (typeof tp !== 'string' || !(TRAFFIC_POLICIES as readonly string[]).includes(tp))
    throw new FieldError('spec.trafficPolicy', 'Allow or Deny', tp);
  const networks = arr(spec.networks, 'spec.networks').map((n, i): EgressNet => {
    const p = `spec.networks[${i}]`;
    const x = obj(n, p);
    const net = cidr(x.cidr, `${p}.cidr`);
    const except = arr(x.except, `${p}.except`).map((e, j) => cidr(e, `${p}.except[${j}]`));
    return { cidr: net, except };
  });
  const clusterOverlap: string[] = [];
  for (const text of clusterNetworks) {
    const c = parseCidr('cluster networks', text);
    if (networks.some((n) => cidrsIntersect(n.cidr, c) && !n.except.some((e) => cidrCovers(e, c))))
      clusterOverlap.push(text);
  }
  const status = (o as { status?: unknown }).status;
  const conditions = isObject(status) && Array.isArray(status.conditions) ? status.conditions.filter(isObject) : [];
  return { meta, trafficPolicy: tp as TrafficPolicy, networks, clusterOverlap, conditions };
}
