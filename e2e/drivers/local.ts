// The local driver: packages/local-cluster's real kube-apiserver, etcd and kube-controller-manager,
// and its node agent that runs pods as processes in network namespaces (images map to programs of
// this repository, fixtures to e2e/fixtures/<name>.mjs).
import { join } from 'node:path';
import { ensureCluster, execInPod, readAuditEvents, type ClusterInfo } from '@minimesh/local-cluster';
import { ensureHelm, repoRoot, run, type RunResult } from '../src/tools.js';
import type { AuditEvent, Driver } from './types.js';

export function createLocalDriver(): Driver {
  let info: ClusterInfo | undefined;
  const cluster = (): ClusterInfo => {
    if (!info) throw new Error('local driver: setup() has not run');
    return info;
  };
  return {
    name: 'local',
    async setup() {
      info = await ensureCluster();
      return `local cluster ${info.server} (kube-apiserver ${info.binDir})`;
    },
    kubeArgs: () => ['--kubeconfig', cluster().kubeconfigPath],
    kubectl: (args, input) =>
      run(
        cluster().kubectlPath,
        ['--kubeconfig', cluster().kubeconfigPath, ...args],
        input === undefined ? {} : { input },
      ),
    helm: (args) => run(ensureHelm(), [...args, '--kubeconfig', cluster().kubeconfigPath], { timeoutMs: 600_000 }),
    fixtureImage: (name) => `minimesh.test/${name}:e2e`,
    async execInPod(namespace, pod, command): Promise<RunResult> {
      return execInPod(namespace, pod, [...command], { timeoutMs: 60_000 });
    },
    async natRules(namespace, pod) {
      // Whichever backend proxy-init used (nft by default, legacy on request): both listings.
      const out: string[] = [];
      for (const bin of ['iptables-nft-save', 'iptables-legacy-save']) {
        const r = await execInPod(namespace, pod, [bin, '-t', 'nat']);
        if (r.code === 0) out.push(r.stdout);
      }
      return out.join('\n');
    },
    async logs(namespace, pod, container) {
      const r = await run(process.execPath, [
        join(repoRoot, 'packages', 'local-cluster', 'dist', 'main.js'),
        'logs',
        `${namespace}/${pod}`,
        '-c',
        container,
      ]);
      return r.code === 0 ? r.stdout : '';
    },
    async auditEvents() {
      return readAuditEvents() as unknown as AuditEvent[];
    },
    kubeconfigHint: () =>
      `export KUBECONFIG=${cluster().kubeconfigPath}   # or: npm run cluster -- kubectl get pods -A`,
  };
}
