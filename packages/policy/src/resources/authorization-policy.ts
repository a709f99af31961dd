// AuthorizationPolicy (policy.minimesh.io/v1alpha1): admits clients to a target (a Server, an
// HTTPRoute, or every Server of the namespace) when they satisfy every required authentication.
import { arr, FieldError, obj, objectMeta, optStr, str, type ObjectMeta } from './fields.js';
import { canonicalKind, POLICY_GROUP, refersTo } from './kinds.js';

export type AuthorizationTarget =
  { kind: 'server'; name: string } | { kind: 'httproute'; name: string } | { kind: 'namespace'; name: string };

export type AuthenticationRef =
  | { kind: 'meshtls'; name: string; namespace?: string }
  | { kind: 'network'; name: string; namespace?: string }
  | { kind: 'serviceaccount'; name: string; namespace?: string };

export interface AuthorizationPolicySpec {
  meta: ObjectMeta;
  target: AuthorizationTarget;
  authentications: AuthenticationRef[];
}

export function parseAuthorizationPolicy(o: unknown): AuthorizationPolicySpec {
  const meta = objectMeta(o, 'AuthorizationPolicy');
  const spec = obj((o as { spec?: unknown }).spec, 'spec');
  const t = obj(spec.targetRef, 'spec.targetRef');
  const ref = { group: optStr(t.group, 'spec.targetRef.group'), kind: str(t.kind, 'spec.targetRef.kind') };
  const name = str(t.name, 'spec.targetRef.name');
  let target: AuthorizationTarget;
  if (refersTo(ref, POLICY_GROUP, 'Server')) target = { kind: 'server', name };
  else if (refersTo(ref, POLICY_GROUP, 'HTTPRoute')) target = { kind: 'httproute', name };
  else if (refersTo(ref, '', 'Namespace')) {
    if (name !== meta.namespace)
      throw new FieldError('spec.targetRef.name', `the policy's own namespace "${meta.namespace}"`, name);
    target = { kind: 'namespace', name };
  } else
    throw new FieldError(
      'spec.targetRef',
      `a ${POLICY_GROUP} Server or HTTPRoute, or a Namespace (got ${canonicalKind(ref)})`,
      spec.targetRef,
    );

  if (!Array.isArray(spec.requiredAuthenticationRefs))
    throw new FieldError(
      'spec.requiredAuthenticationRefs',
      'a list (empty admits any client)',
      spec.requiredAuthenticationRefs,
    );
  const refs = arr(spec.requiredAuthenticationRefs, 'spec.requiredAuthenticationRefs').map((r, i) => {
    const p = `spec.requiredAuthenticationRefs[${i}]`;
    const x = obj(r, p);
    const rk = { group: optStr(x.group, `${p}.group`), kind: str(x.kind, `${p}.kind`) };
    const n = str(x.name, `${p}.name`);
    const ns = optStr(x.namespace, `${p}.namespace`);
    const base = { name: n, ...(ns ? { namespace: ns } : {}) };
    if (refersTo(rk, POLICY_GROUP, 'MeshTLSAuthentication')) return { kind: 'meshtls' as const, ...base };
    if (refersTo(rk, POLICY_GROUP, 'NetworkAuthentication')) return { kind: 'network' as const, ...base };
    if (refersTo(rk, '', 'ServiceAccount')) return { kind: 'serviceaccount' as const, ...base };
    throw new FieldError(
      p,
      `a MeshTLSAuthentication, NetworkAuthentication or ServiceAccount (got ${canonicalKind(rk)})`,
      r,
    );
  });
  // As Linkerd's admission check: at most one of each, and not both a MeshTLSAuthentication and a ServiceAccount.
  const count = (k: AuthenticationRef['kind']) => refs.filter((r) => r.kind === k).length;
  if (count('meshtls') + count('serviceaccount') > 1)
    throw new FieldError(
      'spec.requiredAuthenticationRefs',
      'at most one MeshTLSAuthentication or ServiceAccount',
      spec.requiredAuthenticationRefs,
    );
  if (count('network') > 1)
    throw new FieldError(
      'spec.requiredAuthenticationRefs',
      'at most one NetworkAuthentication',
      spec.requiredAuthenticationRefs,
    );
  return { meta, target, authentications: refs };
}
