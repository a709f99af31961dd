// Done-when 1: the API server is the real one, built at v1.33.13, reachable with the printed kubeconfig.
import { execFileSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { adminClient, ensureCluster, K8S_VERSION, type ClusterInfo } from '../src/index.js';

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

  it('has a Ready node and the controllers at work (default ServiceAccount, kube-root-ca.crt)', async () => {
    const admin = adminClient();
    const node = await admin.request('GET', '/api/v1/nodes/mm-node');
    expect(node.status.conditions.find((c: { type: string }) => c.type === 'Ready').status).toBe('True');
    expect(await admin.get('/api/v1/namespaces/default/serviceaccounts/default')).toBeTruthy();
    const cm = await admin.request('GET', '/api/v1/namespaces/default/configmaps/kube-root-ca.crt');
    expect(cm.data['ca.crt']).toContain('BEGIN CERTIFICATE');
  });
});
