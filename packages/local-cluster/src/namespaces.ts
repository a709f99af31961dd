// Test namespaces: created fresh, and usable only once kube-controller-manager made their `default`
// ServiceAccount (the ServiceAccount admission plugin rejects pods before that, as on any cluster).
import { adminClient } from './cluster.js';
import { KubeApiError } from './kube-client.js';

export async function createNamespace(name: string, labels: Record<string, string> = {}): Promise<void> {
  const admin = adminClient();
  try {
    await admin.request('POST', '/api/v1/namespaces', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name, labels },
    });
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 409)) throw err;
  }
  const deadline = Date.now() + 30_000;
  while (!(await admin.get(`/api/v1/namespaces/${name}/serviceaccounts/default`))) {
    if (Date.now() > deadline)
      throw new Error(`namespace ${name}: no default ServiceAccount after 30s (is kube-controller-manager running?)`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
