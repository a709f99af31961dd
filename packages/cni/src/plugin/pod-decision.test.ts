// One home for the rules: for every pod, the rules minimesh-cni writes in CNI mode are exactly the
// rules proxy-init writes in init-container mode, from the same injector, config and annotations.
import jsonpatch from 'fast-json-patch';
import { parseMeshConfig, type MeshConfig } from '@minimesh/config';
import { createPatch, type PodLike as InjectorPod } from '@minimesh/injector';
import { parseRuleArgs, planFirewall } from '@minimesh/proxy-init';
import { describe, expect, it } from 'vitest';
import type { CniError } from '../errors.js';
import { decideForPod, type PodLike } from './pod-decision.js';

const base = { identityTrustAnchorsPEM: 'PEM' };
const app = {
  name: 'app',
  image: 'example/app:1',
  ports: [{ containerPort: 8080 }, { name: 'db', containerPort: 5432 }],
};
const pod = (annotations: Record<string, string>): InjectorPod => ({
  metadata: { name: 'web', namespace: 'shop', annotations: { 'minimesh.io/inject': 'enabled', ...annotations } },
  spec: { containers: [structuredClone(app)] },
});

function injected(p: InjectorPod, config: MeshConfig): PodLike {
  const { patch } = createPatch(p, {
    config,
    namespace: 'shop',
    namespaceAnnotations: { 'config.minimesh.io/skip-subnets': '10.9.0.0/16' },
  });
  return jsonpatch.applyPatch(structuredClone(p), patch, true, false).newDocument as PodLike;
}

describe('decideForPod', () => {
  it.each([
    ['no overrides', {}, {}],
    [
      'skip ports (pod)',
      { 'config.minimesh.io/skip-inbound-ports': '9000-9010', 'config.minimesh.io/skip-outbound-ports': '3306' },
      {},
    ],
    ['another proxy uid', { 'config.minimesh.io/proxy-uid': '3000' }, {}],
    ['opaque ports (not a rule: same rules)', { 'config.minimesh.io/opaque-ports': 'db,6000' }, {}],
    [
      'config: legacy, IPv6, close-wait, ignored ports',
      {},
      { proxyInit: { iptablesMode: 'legacy', ipv6: true, closeWaitTimeoutSecs: 60, ignoreOutboundPorts: '25' } },
    ],
  ])('writes exactly proxy-init’s rules: %s', (_what, annotations, cfg) => {
    const initMode = parseMeshConfig({ ...base, ...cfg });
    const cniMode = parseMeshConfig({ ...base, ...cfg, cni: { enabled: true } });
    const withInit = injected(pod(annotations), initMode) as InjectorPod;
    const initArgs = withInit.spec?.initContainers?.find((c) => c.name === 'minimesh-init')?.args;
    expect(initArgs).toBeDefined();
    const decision = decideForPod(injected(pod(annotations), cniMode));
    expect(decision.kind).toBe('apply');
    if (decision.kind !== 'apply') return;
    expect(decision.args).toEqual(initArgs);
    const fromInit = parseRuleArgs(initArgs as string[]);
    expect(decision.rules).toEqual(fromInit);
    expect(planFirewall(decision.rules.options)).toEqual(planFirewall(fromInit.options));
  });

  it('leaves alone pods that are not meshed, and pods whose proxy-init writes the rules', () => {
    expect(decideForPod({ metadata: { name: 'a' }, spec: { containers: [{ name: 'app' }] } })).toEqual({
      kind: 'skip',
      reason: 'it has no minimesh-proxy',
    });
    expect(decideForPod(injected(pod({}), parseMeshConfig(base)))).toEqual({
      kind: 'skip',
      reason: 'its minimesh-init container writes its rules (init-container mode)',
    });
    expect(decideForPod({ spec: { hostNetwork: true, containers: [{ name: 'minimesh-proxy' }] } }).kind).toBe('skip');
  });

  it('refuses a meshed pod without recorded arguments, or with arguments that are not rule flags', () => {
    const meshed = injected(pod({}), parseMeshConfig({ ...base, cni: { enabled: true } }));
    const without = structuredClone(meshed);
    delete without.metadata?.annotations?.['minimesh.io/proxy-init-args'];
    expect(() => decideForPod(without)).toThrow(
      /^pod shop\/web has minimesh-proxy but neither minimesh-init nor the minimesh.io\/proxy-init-args annotation: it was not injected by a minimesh injector in CNI mode/,
    );
    const forged = structuredClone(meshed);
    forged.metadata!.annotations!['minimesh.io/proxy-init-args'] = JSON.stringify(['--netns', '/proc/1/ns/net']);
    expect(() => decideForPod(forged)).toThrow(
      "pod shop/web: annotation minimesh.io/proxy-init-args: Unknown option '--netns'",
    );
    forged.metadata!.annotations!['minimesh.io/proxy-init-args'] = '--proxy-uid 0';
    try {
      decideForPod(forged);
      expect.unreachable();
    } catch (err) {
      expect((err as CniError).cniCode).toBe(100);
      expect((err as Error).message).toContain('is not valid: expected a JSON list of proxy-init arguments');
    }
  });
});
