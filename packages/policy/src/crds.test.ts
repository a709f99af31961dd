// The chart's CRD template is generated from src/crds.ts: this fails when someone edits one without
// the other. (Whether the API server accepts the schemas, and rejects malformed objects with them, is
// tested against the real API server in test/crds.test.ts.)
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { CRD_TEMPLATE_PATH, policyCrds, renderCrdTemplate } from './crds.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));

describe('policy CRDs', () => {
  it('the chart template is up to date (npm run generate-crds -w @minimesh/policy)', () => {
    const want = renderCrdTemplate((v) => stringify(v, { lineWidth: 0 }));
    expect(readFileSync(root + CRD_TEMPLATE_PATH, 'utf8')).toBe(want);
  });

  it("serves Linkerd's kinds and versions, one storage version each", () => {
    const summary = policyCrds().map((c) => {
      const spec = c.spec as {
        names: { kind: string };
        versions: Array<{ name: string; storage: boolean; deprecated?: boolean }>;
      };
      return `${spec.names.kind}: ${spec.versions.map((v) => `${v.name}${v.storage ? '*' : ''}${v.deprecated ? '(deprecated)' : ''}`).join(' ')}`;
    });
    expect(summary).toEqual([
      'Server: v1alpha1(deprecated) v1beta1(deprecated) v1beta2 v1beta3*',
      'AuthorizationPolicy: v1alpha1*',
      'MeshTLSAuthentication: v1alpha1*',
      'NetworkAuthentication: v1alpha1*',
      'HTTPRoute: v1alpha1 v1beta1 v1beta2 v1beta3*',
      'HTTPLocalRateLimitPolicy: v1alpha1*',
      'EgressNetwork: v1alpha1*',
    ]);
  });

  it('renders one YAML document per CRD, each labelled and kept through the minimesh-crds helpers', () => {
    const text = readFileSync(root + CRD_TEMPLATE_PATH, 'utf8');
    const body = text.replace(/\{\{[^}]*\}\}/g, '');
    const docs = parseAllDocuments(body)
      .map((d) => d.toJS() as { metadata?: { name?: string } } | null)
      .filter(Boolean);
    expect(docs.map((d) => d?.metadata?.name)).toEqual([
      'servers.policy.minimesh.io',
      'authorizationpolicies.policy.minimesh.io',
      'meshtlsauthentications.policy.minimesh.io',
      'networkauthentications.policy.minimesh.io',
      'httproutes.policy.minimesh.io',
      'httplocalratelimitpolicies.policy.minimesh.io',
      'egressnetworks.policy.minimesh.io',
    ]);
    expect(text.match(/include "minimesh-crds\.labels"/g)).toHaveLength(7);
    expect(text.match(/include "minimesh-crds\.annotations"/g)).toHaveLength(7);
  });
});
