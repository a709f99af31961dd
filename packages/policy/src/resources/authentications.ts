// MeshTLSAuthentication (client identities) and NetworkAuthentication (client networks), both
// policy.minimesh.io/v1alpha1. AuthorizationPolicies in any namespace may refer to them.
import { parseCidr } from '@minimesh/config';
import { namespaceIdentity, serviceAccountIdentity, type ClusterInfo } from '../cluster-info.js';
import type { NetworkMatch } from '../model.js';
import { arr, FieldError, obj, objectMeta, optStr, str, type ObjectMeta } from './fields.js';
import { canonicalKind, refersTo } from './kinds.js';

/** "*" matches every identity, "*.<suffix>" a suffix, anything else one identity. */
export type IdentityMatch = { kind: 'exact'; name: string } | { kind: 'suffix'; parts: string[] };

export function parseIdentityMatch(s: string): IdentityMatch {
  if (s === '*') return { kind: 'suffix', parts: [] };
  if (s.startsWith('*.')) return { kind: 'suffix', parts: s.split('.').slice(1) };
  return { kind: 'exact', name: s };
}

export interface MeshTLSAuthenticationSpec {
  meta: ObjectMeta;
  matches: IdentityMatch[];
}

export function parseMeshTLSAuthentication(o: unknown, cluster: ClusterInfo): MeshTLSAuthenticationSpec {
  const meta = objectMeta(o, 'MeshTLSAuthentication');
  const spec = obj((o as { spec?: unknown }).spec, 'spec');
  const hasIds = Array.isArray(spec.identities);
  const hasRefs = Array.isArray(spec.identityRefs);
  if (hasIds === hasRefs)
    throw new FieldError('spec', 'exactly one of identities and identityRefs', {
      identities: spec.identities,
      identityRefs: spec.identityRefs,
    });
  const matches: IdentityMatch[] = [];
  for (const [i, s] of arr(spec.identities, 'spec.identities').entries())
    matches.push(parseIdentityMatch(str(s, `spec.identities[${i}]`)));
  for (const [i, r] of arr(spec.identityRefs, 'spec.identityRefs').entries()) {
    const p = `spec.identityRefs[${i}]`;
    const x = obj(r, p);
    const ref = { group: optStr(x.group, `${p}.group`), kind: str(x.kind, `${p}.kind`) };
    const name = str(x.name, `${p}.name`);
    if (refersTo(ref, '', 'ServiceAccount')) {
      const ns = optStr(x.namespace, `${p}.namespace`) ?? meta.namespace;
      matches.push({ kind: 'exact', name: serviceAccountIdentity(cluster, ns, name) });
    } else if (refersTo(ref, '', 'Namespace')) {
      matches.push(parseIdentityMatch(namespaceIdentity(cluster, name)));
    } else throw new FieldError(p, `a ServiceAccount or Namespace (got ${canonicalKind(ref)})`, r);
  }
  if (matches.length === 0) throw new FieldError('spec', 'at least one identity', spec);
  return { meta, matches };
}

export interface NetworkAuthenticationSpec {
  meta: ObjectMeta;
  networks: NetworkMatch[];
}

export function parseNetworkAuthentication(o: unknown): NetworkAuthenticationSpec {
  const meta = objectMeta(o, 'NetworkAuthentication');
  const spec = obj((o as { spec?: unknown }).spec, 'spec');
  const networks = arr(spec.networks, 'spec.networks').map((n, i) => {
    const p = `spec.networks[${i}]`;
    const x = obj(n, p);
    const net = cidr(x.cidr, `${p}.cidr`);
    const except = arr(x.except, `${p}.except`).map((e, j) => cidr(e, `${p}.except[${j}]`));
    return { net, except };
  });
  if (networks.length === 0) throw new FieldError('spec.networks', 'at least one network', spec.networks);
  return { meta, networks };
}

/** A CIDR as "<address>/<prefix>" (a bare address gets its full-length prefix). */
function cidr(v: unknown, path: string): string {
  const s = str(v, path);
  try {
    const c = parseCidr(path, s);
    return `${c.address}/${c.prefix}`;
  } catch {
    throw new FieldError(path, 'a CIDR such as 10.0.0.0/8 or fd00::/8', v);
  }
}
