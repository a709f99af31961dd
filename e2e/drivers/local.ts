// The local driver: packages/local-cluster's real node (kube-apiserver, etcd, controllers, kubelet,
// containerd, kube-proxy, CoreDNS) running the images scripts/images.sh builds, imported into
// containerd and never pulled (imagePullPolicy Never). Everything past cluster creation and image
// loading is what a user does with kubectl, shared with the k3d driver (kubectl-parts.ts).
import { MINIMESH_VERSION } from '@minimesh/config';
import { readdirSync, readlinkSync } from 'node:fs';
import {
  componentStatus,
  ensureCluster,
  isHealthy,
  podSandboxPid,
  readAuditEvents,
  type ClusterInfo,
} from '@minimesh/local-cluster';
import { createOutsideHost } from '@minimesh/test-support/outside-host';
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
    async outsideHost(tag, app) {
      // A network namespace of the spec's own, joined to the node's namespace (where the pods' bridge
      // routes): pods reach it, nothing else does.
      const h = await createOutsideHost({ gatewayNetns: cluster().nodeNetns, tag, app });
      return { ip: h.ip, log: async () => h.log(), remove: async () => h.remove() };
    },
    async killPodProcesses(namespace, pod) {
      // The pod's containers share its sandbox's network namespace: every process in it but the
      // sandbox (pause) belongs to one of its containers.
      const sandbox = await podSandboxPid(namespace, pod);
      const netns = readlinkSync(`/proc/${sandbox}/ns/net`);
      const killed: string[] = [];
      for (const entry of readdirSync('/proc')) {
        const pid = Number(entry);
        if (!Number.isInteger(pid) || pid === sandbox) continue;
        try {
          if (readlinkSync(`/proc/${pid}/ns/net`) !== netns) continue;
          process.kill(pid, 'SIGKILL');
          killed.push(String(pid));
        } catch {
          /* gone, or not ours to read */
        }
      }
      if (killed.length === 0) throw new Error(`kill ${namespace}/${pod}: no process besides the sandbox`);
      return `SIGKILL to ${killed.length} process(es) of ${namespace}/${pod} (pids ${killed.join(', ')})`;
    },
    async restartApiServer() {
      const api = componentStatus().find((c) => c.name === 'kube-apiserver');
      if (!api?.running || api.pid === undefined) throw new Error('restartApiServer: kube-apiserver is not running');
      const t0 = Date.now();
      const alive = () => {
        try {
          process.kill(api.pid as number, 0);
          return true;
        } catch {
          return false;
        }
      };
      // SIGTERM: it closes its listeners and every watch; it may wait up to 60 s for long requests
      // (log streams) before it exits: SIGKILL after 5 s.
      process.kill(api.pid, 'SIGTERM');
      let how = 'SIGTERM';
      while (alive() && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 100));
      if (alive()) {
        process.kill(api.pid, 'SIGKILL');
        how = 'SIGTERM, SIGKILL after 5 s';
        while (alive() && Date.now() - t0 < 15_000) await new Promise((r) => setTimeout(r, 100));
      }
      const stopped = Date.now() - t0;
      // ensureCluster() starts what is not running (only kube-apiserver here) and waits for /readyz.
      info = await ensureCluster();
      if (!(await isHealthy())) throw new Error('restartApiServer: the cluster is not healthy after the restart');
      return `kube-apiserver pid ${api.pid} stopped (${how}) in ${stopped} ms, ready again ${Date.now() - t0} ms after the signal`;
    },
    kubeconfigHint: () =>
      `export KUBECONFIG=${cluster().kubeconfigPath}   # or: npm run cluster -- kubectl get pods -A`,
  };
}
