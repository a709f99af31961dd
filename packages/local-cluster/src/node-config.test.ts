import { describe, expect, it } from 'vitest';
import { coreDnsObjects, COREFILE, objectPath } from './coredns.js';
import { mountNamespaceScript, PRIVATE_TMPFS } from './host.js';
import { cniConfig, containerdConfig, kubeletConfig, kubeProxyConfig } from './node-config.js';
import { CGROUP_ROOT, NODE_NAME, statePaths } from './paths.js';

const p = statePaths('/tmp/mm-test-state');

describe('node configuration', () => {
  it('containerd: the settings this machine needs, everything but the root under the state directory', () => {
    const c = containerdConfig(p, '/cache/containerd/mm');
    expect(c).toContain('root = "/cache/containerd/mm"');
    expect(c).toContain('state = "/tmp/mm-test-state/containerd/state"');
    expect(c).toContain('address = "/tmp/mm-test-state/containerd/containerd.sock"');
    expect(c).toContain('restrict_oom_score_adj = true');
    expect(c).toContain('netns_mounts_under_state_dir = true');
    expect(c).toContain('sandbox_image = "registry.k8s.io/pause:3.10"');
    expect(c).toContain('SystemdCgroup = false');
    // The node's own bin dir (links to Debian's plugins): what a DaemonSet installs stays in the state directory.
    expect(c).toContain('bin_dir = "/tmp/mm-test-state/cni/bin"');
    expect(c).toContain('path = "/tmp/mm-test-state/containerd/opt"');
  });
  it('CNI: bridge mm0 with the node IP as gateway, host-local IPAM under the state directory', () => {
    const c = JSON.parse(cniConfig(p));
    expect(c.plugins.map((x: { type: string }) => x.type)).toEqual(['bridge', 'portmap']);
    expect(c.plugins[0]).toMatchObject({ bridge: 'mm0', isGateway: true, hairpinMode: true });
    expect(c.plugins[0].ipam).toMatchObject({ type: 'host-local', dataDir: '/tmp/mm-test-state/cni/ipam' });
    expect(c.plugins[0].ipam.ranges[0][0]).toMatchObject({ subnet: '10.23.0.0/16', gateway: '10.23.0.1' });
  });
  it('kubelet: cgroupfs under its own root, webhook auth, cluster DNS, no evictions or image GC', () => {
    const k = JSON.parse(kubeletConfig(p));
    expect(k).toMatchObject({
      kind: 'KubeletConfiguration',
      cgroupDriver: 'cgroupfs',
      cgroupRoot: CGROUP_ROOT,
      failSwapOn: false,
      readOnlyPort: 0,
      authorization: { mode: 'Webhook' },
      authentication: { anonymous: { enabled: false }, webhook: { enabled: true } },
      clusterDNS: ['10.247.0.10'],
      imageGCHighThresholdPercent: 100,
      podLogsDir: '/tmp/mm-test-state/pod-logs',
    });
  });
  it("kube-proxy: iptables mode, and the host's conntrack settings left alone", () => {
    const k = JSON.parse(kubeProxyConfig(p));
    expect(k).toMatchObject({ mode: 'iptables', clusterCIDR: '10.23.0.0/16', hostnameOverride: NODE_NAME });
    expect(k.conntrack).toEqual({
      maxPerCore: 0,
      min: 0,
      tcpEstablishedTimeout: '0s',
      tcpCloseWaitTimeout: '0s',
      udpTimeout: '0s',
      udpStreamTimeout: '0s',
    });
  });
  it('the private mount namespace: a tmpfs on each fixed host path, then a sleeping holder', () => {
    const s = mountNamespaceScript();
    for (const d of PRIVATE_TMPFS) expect(s).toContain(`mount -t tmpfs -o mode=0755 minimesh-${NODE_NAME} ${d} && `);
    expect(s.endsWith('exec sleep infinity')).toBe(true);
  });
});

describe('CoreDNS', () => {
  it('answers cluster.local only: no forward plugin, nothing leaves the node', () => {
    expect(COREFILE).toContain('kubernetes cluster.local in-addr.arpa ip6.arpa');
    expect(COREFILE).not.toMatch(/forward|proxy/);
  });
  it('is a Deployment behind kube-system/kube-dns at the clusterDNS address, never pulled', () => {
    const objs = coreDnsObjects();
    expect(objs.map((o) => objectPath(o))).toEqual([
      '/api/v1/namespaces/kube-system/serviceaccounts/coredns',
      '/apis/rbac.authorization.k8s.io/v1/clusterroles/system:coredns',
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/system:coredns',
      '/api/v1/namespaces/kube-system/configmaps/coredns',
      '/apis/apps/v1/namespaces/kube-system/deployments/coredns',
      '/api/v1/namespaces/kube-system/services/kube-dns',
    ]);
    const dep = objs.find((o) => o.kind === 'Deployment')!;
    expect(dep.spec.template.spec.containers[0]).toMatchObject({
      image: 'registry.k8s.io/coredns/coredns:v1.15.0',
      imagePullPolicy: 'Never',
    });
    expect(objs.find((o) => o.kind === 'Service')!.spec.clusterIP).toBe('10.247.0.10');
  });
});
