// HTTPLocalRateLimitPolicy (policy.minimesh.io/v1alpha1, Linkerd's policy.linkerd.io kind): a limit on
// the HTTP requests a Server admits per second — `total` over all clients, `identity` per client
// identity (clients without one share a bucket), and `overrides` for particular ServiceAccounts (an
// override replaces the per-identity limit for them). The CRD's schema refuses a limit below 1.
import { arr, FieldError, obj, objectMeta, optStr, str, type ObjectMeta } from './fields.js';
import { canonicalKind, POLICY_GROUP, refersTo } from './kinds.js';

export interface RateLimitOverride {
  requestsPerSecond: number;
  /** ServiceAccounts (namespace defaults to the policy's). */
  clients: Array<{ namespace: string; name: string }>;
}

export interface RateLimitPolicySpec {
  meta: ObjectMeta;
  /** The Server it limits (its own namespace). */
  server: string;
  total?: number;
  identity?: number;
  overrides: RateLimitOverride[];
}

function rps(v: unknown, path: string): number {
  const o = obj(v, path);
  const n = o.requestsPerSecond;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 0xffff_ffff)
    throw new FieldError(`${path}.requestsPerSecond`, 'a whole number of requests per second, at least 1', n);
  return n;
}

export function parseRateLimitPolicy(o: unknown): RateLimitPolicySpec {
  const meta = objectMeta(o, 'HTTPLocalRateLimitPolicy');
  const spec = obj((o as { spec?: unknown }).spec, 'spec');
  const t = obj(spec.targetRef, 'spec.targetRef');
  const ref = { group: optStr(t.group, 'spec.targetRef.group'), kind: str(t.kind, 'spec.targetRef.kind') };
  if (!refersTo(ref, POLICY_GROUP, 'Server'))
    throw new FieldError('spec.targetRef', `a ${POLICY_GROUP} Server (got ${canonicalKind(ref)})`, spec.targetRef);
  const out: RateLimitPolicySpec = { meta, server: str(t.name, 'spec.targetRef.name'), overrides: [] };
  if (spec.total !== undefined && spec.total !== null) out.total = rps(spec.total, 'spec.total');
  if (spec.identity !== undefined && spec.identity !== null) out.identity = rps(spec.identity, 'spec.identity');
  out.overrides = arr(spec.overrides, 'spec.overrides').map((x, i) => {
    const p = `spec.overrides[${i}]`;
    const clients = arr(obj(x, p).clientRefs, `${p}.clientRefs`).map((c, j) => {
      const q = `${p}.clientRefs[${j}]`;
      const r = obj(c, q);
      const rk = { group: optStr(r.group, `${q}.group`), kind: str(r.kind, `${q}.kind`) };
      if (!refersTo(rk, '', 'ServiceAccount'))
        throw new FieldError(q, `a ServiceAccount (got ${canonicalKind(rk)})`, c);
      return { namespace: optStr(r.namespace, `${q}.namespace`) || meta.namespace, name: str(r.name, `${q}.name`) };
    });
    if (clients.length === 0) throw new FieldError(`${p}.clientRefs`, 'at least one ServiceAccount', clients);
    return { requestsPerSecond: rps(x, p), clients };
  });
  if (out.total === undefined && out.identity === undefined && out.overrides.length === 0)
    throw new FieldError('spec', 'at least one of total, identity or overrides', spec);
  return out;
}
