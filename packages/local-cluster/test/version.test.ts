// The API server and the node are the real ones, built at v1.33.13, reachable with the printed kubeconfig.
import { execFileSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  adminClient,
  CLUSTER_DNS_IP,
  COREDNS_IMAGE,
  ensureCluster,
  K8S_VERSION,
  type ClusterInfo,
} from '../src/index.js';

let info: ClusterInfo;
beforeAll(async () => {
  info = await ensureCluster();
});

describe('local cluster version', () => {
  it('reports the built version on /version', async () => {
    const v = await adminClient().request('GET', '/version');
    expect(v.gitVersion).toBe(K8S_VERSION);
    expect(v.major).toBe('1');
    expect(v.minor).toBe('33');
  });

  it('kubectl version with the printed kubeconfig shows the server version', () => {
    const out = execFileSync(info.kubectlPath, ['--kubeconfig', info.kubeconfigPath, 'version', '-o', 'json'], {
      encoding: 'utf8',
    });
    const v = JSON.parse(out) as { serverVersion: { gitVersion: string } };
    expect(v.serverVersion.gitVersion).toBe('v1.33.13');
  });

  it('npm run cluster -- up twice is harmless and prints KUBECONFIG= and AUDIT_LOG=', () => {
    const out = execFileSync('bash', ['../../scripts/cluster.sh', 'up'], { encoding: 'utf8' });
    expect(out).toContain(`KUBECONFIG=${info.kubeconfigPath}`);
    expect(out).toContain(`AUDIT_LOG=${info.auditLogPath}`);
  });

  it('has a Ready node run by kubelet v1.33.13 on containerd, and the controllers at work', async () => {
    const admin = adminClient();
    const node = await admin.request('GET', `/api/v1/nodes/${info.nodeName}`);
    expect(node.status.conditions.find((c: { type: string }) => c.type === 'Ready').status).toBe('True');
    expect(node.status.nodeInfo.kubeletVersion).toBe('v1.33.13');
    expect(node.status.nodeInfo.containerRuntimeVersion).toMatch(/^containerd:\/\/\d+\.\d+\.\d+/);
    expect(node.status.addresses).toContainEqual({ type: 'InternalIP', address: info.nodeIp });
    expect(await admin.get('/api/v1/namespaces/default/serviceaccounts/default')).toBeTruthy();
    const cm = await admin.request('GET', '/api/v1/namespaces/default/configmaps/kube-root-ca.crt');
    expect(cm.data['ca.crt']).toContain('BEGIN CERTIFICATE');
  });

  it('runs CoreDNS behind Service kube-system/kube-dns at the clusterDNS address', async () => {
    const admin = adminClient();
    const svc = await admin.request('GET', '/api/v1/namespaces/kube-system/services/kube-dns');
    expect(svc.spec.clusterIP).toBe(CLUSTER_DNS_IP);
    const dep = await admin.request('GET', '/apis/apps/v1/namespaces/kube-system/deployments/coredns');
    expect(dep.status.availableReplicas).toBe(1);
    expect(dep.spec.template.spec.containers[0].image).toBe(COREDNS_IMAGE);
  });
});
