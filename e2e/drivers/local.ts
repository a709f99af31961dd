// The local driver: packages/local-cluster's real node (kube-apiserver, etcd, controllers, kubelet,
// containerd, kube-proxy, CoreDNS) running the images scripts/images.sh builds, imported into
// containerd and never pulled (imagePullPolicy Never). Everything past cluster creation and image
// loading is what a user does with kubectl, shared with the k3d driver (kubectl-parts.ts).
import { MINIMESH_VERSION } from '@minimesh/config';
import { ensureCluster, readAuditEvents, type ClusterInfo } from '@minimesh/local-cluster';
import { ensureHelm, run } from '../src/tools.js';
import { kubectlParts } from './kubectl-parts.js';
import type { AuditEvent, Driver } from './types.js';

const version = process.env.MINIMESH_VERSION ?? MINIMESH_VERSION;

export function createLocalDriver(): Driver {
  let info: ClusterInfo | undefined;
  const cluster = (): ClusterInfo => {
    if (!info) throw new Error('local driver: setup() has not run');
    return info;
  };
  const kubectl = (args: readonly string[], input?: string) =>
    run(
      cluster().kubectlPath,
      ['--kubeconfig', cluster().kubeconfigPath, ...args],
      input === undefined ? {} : { input },
    );
  const parts = kubectlParts(kubectl, `ghcr.io/minimesh/proxy-init:${version}`, 'Never');
  return {
    name: 'local',
    async setup() {
      info = await ensureCluster();
      return `local cluster ${info.server} (node ${info.nodeName}: kubelet + containerd, images from scripts/images.sh)`;
    },
    kubeArgs: () => ['--kubeconfig', cluster().kubeconfigPath],
    kubectl,
    helm: (args) => run(ensureHelm(), [...args, '--kubeconfig', cluster().kubeconfigPath], { timeoutMs: 600_000 }),
    // The images are imported into containerd; pulling is impossible here and never tried.
    chartArgs: () => [
      '--set',
      'controllerImage.pullPolicy=Never',
      '--set',
      'proxy.image.pullPolicy=Never',
      '--set',
      'proxyInit.image.pullPolicy=Never',
    ],
    imagePullPolicy: 'Never',
    fixtureImage: (name) => `minimesh.test/${name}:e2e`,
    ...parts,
    async auditEvents() {
      return readAuditEvents() as unknown as AuditEvent[];
    },
    kubeconfigHint: () =>
      `export KUBECONFIG=${cluster().kubeconfigPath}   # or: npm run cluster -- kubectl get pods -A`,
  };
}
