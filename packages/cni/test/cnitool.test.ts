// minimesh-cni under the reference CNI harness (cnitool), as root: the single-executable plugin
// chained after Debian's bridge plugin in a throw-away node namespace, for pods the real injector
// meshed in CNI mode. ADD writes exactly proxy-init's rules (and the network validator, run as an
// unprivileged uid in the pod, sees its traffic redirected), CHECK notices a missing rule, DEL
// removes the rules and is idempotent, unmeshed pods are left alone, and failures come back as CNI
// errors whose message says what to do.
import jsonpatch from 'fast-json-patch';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseMeshConfig } from '@minimesh/config';
import { createPatch, type PodLike } from '@minimesh/injector';
import { diffNatRules, parseRuleArgs, planFirewall } from '@minimesh/proxy-init';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containerIdOf, createHarness, run, type Harness } from './harness.js';

const config = parseMeshConfig({ identityTrustAnchorsPEM: 'PEM', cni: { enabled: true } });

function meshed(name: string, annotations: Record<string, string> = {}): PodLike {
  const pod: PodLike = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'shop',
      uid: `uid-${name}`,
      annotations: { 'minimesh.io/inject': 'enabled', ...annotations },
    },
    spec: {
      nodeName: 'node-a',
      containers: [{ name: 'app', image: 'example/app:1', ports: [{ containerPort: 8080 }] }],
    },
  };
  const { patch } = createPatch(pod, { config, namespace: 'shop' });
  return jsonpatch.applyPatch(pod, patch, true, false).newDocument;
}

describe('minimesh-cni under cnitool', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
  }, 180_000);
  afterAll(async () => {
    await h?.destroy();
  });

  it('VERSION names the spec versions it speaks; without CNI_COMMAND it answers a CNI error', async () => {
    const bin = join(h.dir, 'bin', 'minimesh-cni');
    const version = await run([bin], { env: { PATH: process.env.PATH, CNI_COMMAND: 'VERSION' } });
    expect(version.code).toBe(0);
    expect(JSON.parse(version.stdout)).toEqual({
      cniVersion: '1.0.0',
      supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0'],
    });
    const none = await run([bin], { env: { PATH: process.env.PATH } });
    expect(none.code).toBe(1);
    expect(JSON.parse(none.stdout)).toMatchObject({
      code: 4,
      msg: expect.stringMatching(/^minimesh-cni: CNI_COMMAND "" is not valid/),
    });
  });

  describe('a pod meshed in CNI mode', () => {
    const pod = meshed('web', { 'config.minimesh.io/skip-outbound-ports': '3306' });
    const args = JSON.parse(pod.metadata?.annotations?.['minimesh.io/proxy-init-args'] ?? '[]') as string[];
    const plan = planFirewall(parseRuleArgs(args).options).families[0]!;
    let netns = '';
    const save = async () => (await h.exec(netns, ['iptables-nft-save', '-t', 'nat'])).stdout;

    beforeAll(async () => {
      h.setPod('shop', 'web', pod);
      netns = await h.podNetns();
    });

    it('ADD: the bridge result passes through, and the pod has exactly proxy-init’s rules', async () => {
      const r = await h.cnitool('add', netns, { namespace: 'shop', name: 'web' });
      expect(r.code, r.stderr).toBe(0);
      const result = JSON.parse(r.stdout) as { cniVersion: string; ips: { address: string }[]; interfaces: unknown[] };
      expect(result.cniVersion).toBe('1.0.0');
      expect(result.ips[0]?.address).toMatch(/^10\.233\.7\.\d+\/24$/);
      expect(args).toContain('443,3306,6443');
      expect(diffNatRules(plan, await save())).toEqual([]);
      expect(await save()).toContain(
        '-A PROXY_INIT_OUTPUT -m owner --uid-owner 2102 -m comment --comment "proxy-init/ignore-proxy-user-id" -j RETURN',
      );
    });

    it('the network validator, unprivileged in the pod, finds its traffic redirected', async () => {
      const r = await h.validate(netns, '3s');
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/traffic is redirected: a connection to 192\.0\.2\.2:20001 reached 127\.0\.0\.1:4140/);
    });

    it('records what it wrote, for DEL and for explain', () => {
      const record = JSON.parse(readFileSync(join(h.stateDir, 'pods', `${containerIdOf(netns)}.json`), 'utf8')) as {
        namespace: string;
        name: string;
        uid: string;
        node: string;
        args: string[];
        mode: string;
        saved: Record<string, string>;
      };
      expect(record).toMatchObject({
        namespace: 'shop',
        name: 'web',
        uid: 'uid-web',
        node: 'node-a',
        args,
        mode: 'nft',
      });
      expect(diffNatRules(plan, record.saved['4'] ?? '')).toEqual([]);
    });

    it('CHECK passes, and names the rule that went missing', async () => {
      const ok = await h.cnitool('check', netns, { namespace: 'shop', name: 'web' });
      expect(ok.code, ok.stderr).toBe(0);
      const del = await h.exec(netns, ['iptables-nft', '-t', 'nat', '-D', 'PROXY_INIT_OUTPUT', '1']);
      expect(del.code, del.stderr).toBe(0);
      const bad = await h.cnitool('check', netns, { namespace: 'shop', name: 'web' });
      expect(bad.code).not.toBe(0);
      expect(bad.stdout + bad.stderr).toContain(
        'minimesh-cni: pod shop/web: the nat rules are not the ones minimesh-cni wrote: IPv4: chain PROXY_INIT_OUTPUT: missing `-A PROXY_INIT_OUTPUT -m owner --uid-owner 2102',
      );
    });

    it('DEL removes the rules and the record; a second DEL is fine', async () => {
      const r = await h.cnitool('del', netns, { namespace: 'shop', name: 'web' });
      expect(r.code, r.stderr).toBe(0);
      expect(await save()).not.toContain('PROXY_INIT');
      expect(existsSync(join(h.stateDir, 'pods', `${containerIdOf(netns)}.json`))).toBe(false);
      const again = await h.cnitool('del', netns, { namespace: 'shop', name: 'web' });
      expect(again.code, again.stderr).toBe(0);
    });
  });

  it('leaves a pod that is not meshed alone, and its traffic is not redirected', async () => {
    h.setPod('shop', 'plain', {
      metadata: { name: 'plain', namespace: 'shop' },
      spec: { containers: [{ name: 'app' }] },
    });
    const netns = await h.podNetns();
    const r = await h.cnitool('add', netns, { namespace: 'shop', name: 'plain' });
    expect(r.code, r.stderr).toBe(0);
    expect((await h.exec(netns, ['iptables-nft-save', '-t', 'nat'])).stdout).not.toContain('PROXY_INIT');
    // The validator's connection leaves for the node namespace, which forwards nothing: no answer.
    const v = await h.validate(netns, '2s');
    expect(v.code).toBe(1);
    expect(v.stderr).toContain("this pod's traffic is not redirected to the proxy");
  });

  it('fails ADD with a CNI error the kubelet shows when it cannot know the rules', async () => {
    const pod = meshed('forged');
    delete pod.metadata?.annotations?.['minimesh.io/proxy-init-args'];
    h.setPod('shop', 'forged', pod);
    const netns = await h.podNetns();
    const r = await h.cnitool('add', netns, { namespace: 'shop', name: 'forged' });
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toContain(
      'minimesh-cni: pod shop/forged has minimesh-proxy but neither minimesh-init nor the minimesh.io/proxy-init-args annotation',
    );
    const missing = await h.cnitool('add', await h.podNetns(), { namespace: 'shop', name: 'nobody' });
    expect(missing.code).not.toBe(0);
    expect(missing.stdout + missing.stderr).toMatch(
      /minimesh-cni: reading pod shop\/nobody: the API server at http:\/\/127\.0\.0\.1:\d+ answered 404: pods "nobody" not found/,
    );
  });
});
