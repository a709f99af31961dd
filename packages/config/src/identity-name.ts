// Mesh identities: <sa>.<ns>.serviceaccount.identity.<control-plane-ns>.<trust-domain>
import { ConfigError } from './errors.js';

export interface IdentityParts {
  serviceAccount: string;
  namespace: string;
  controlPlaneNamespace: string;
  trustDomain: string;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function toIdentityName(p: IdentityParts): string {
  for (const [field, value] of [
    ['serviceAccount', p.serviceAccount],
    ['namespace', p.namespace],
    ['controlPlaneNamespace', p.controlPlaneNamespace],
  ] as const) {
    if (!DNS_LABEL.test(value)) throw new ConfigError(field, value, 'a DNS label (lowercase letters, digits and "-")');
  }
  return `${p.serviceAccount}.${p.namespace}.serviceaccount.identity.${p.controlPlaneNamespace}.${p.trustDomain}`;
}

/** The inverse of toIdentityName; undefined when the name is not a service-account identity of that control plane. */
export function fromIdentityName(
  name: string,
  expect: { controlPlaneNamespace: string; trustDomain: string },
): { serviceAccount: string; namespace: string } | undefined {
  const suffix = `.serviceaccount.identity.${expect.controlPlaneNamespace}.${expect.trustDomain}`;
  if (!name.endsWith(suffix)) return undefined;
  const parts = name.slice(0, -suffix.length).split('.');
  if (parts.length !== 2) return undefined;
  const [serviceAccount = '', namespace = ''] = parts;
  if (!DNS_LABEL.test(serviceAccount) || !DNS_LABEL.test(namespace)) return undefined;
  return { serviceAccount, namespace };
}
