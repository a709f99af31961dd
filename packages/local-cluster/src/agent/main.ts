#!/usr/bin/env node
// The local cluster's node agent: registers Node mm-node, binds pending pods to it (there is no
// scheduler), runs each pod as processes in its own network namespace, and keeps /etc/hosts of every
// pod current with the Services. On start it cleans whatever a previous agent left and runs the
// node's pods afresh.
import { existsSync, rmSync } from 'node:fs';
import { createKubeClient, credentialsFromFiles, KubeApiError, type KubeObject } from '../kube-client.js';
import { NODE_IP, NODE_NAME, POD_NETNS_PREFIX, stateDir, statePaths } from '../paths.js';
import { destroyNetns, listNetns } from '../procs.js';
import { mountsUnder } from '../cluster.js';
import { execFileSync } from 'node:child_process';
import { renderHosts } from './hosts.js';
import { createAgentLog } from './log.js';
import { IpAllocator } from './network.js';
import { PodRunner } from './pod-runner.js';
import { ServiceProxy } from './service-proxy.js';

const log = createAgentLog({ component: 'node-agent' });
const paths = statePaths(stateDir());
const client = createKubeClient(credentialsFromFiles({ ca: paths.caCert, cert: paths.adminCert, key: paths.adminKey }));
const ips = new IpAllocator();
const runners = new Map<string, PodRunner>();
const services = new Map<string, KubeObject>();
const finishing = new Set<string>();
const serviceProxy = new ServiceProxy(log.child({ component: 'service-proxy' }));

async function registerNode(): Promise<void> {
  const body = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: NODE_NAME,
      labels: {
        'kubernetes.io/hostname': NODE_NAME,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        'node-role.kubernetes.io/control-plane': '',
      },
    },
    spec: { podCIDR: '10.23.0.0/16', podCIDRs: ['10.23.0.0/16'] },
  };
  try {
    await client.request('POST', '/api/v1/nodes', body);
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 409)) throw err;
  }
  await heartbeat();
}

async function heartbeat(): Promise<void> {
  const t = new Date().toISOString();
  const cond = (type: string, status: string, reason: string) => ({
    type,
    status,
    reason,
    message: reason,
    lastHeartbeatTime: t,
    lastTransitionTime: t,
  });
  await client.request(
    'PATCH',
    `/api/v1/nodes/${NODE_NAME}/status`,
    {
      status: {
        conditions: [
          cond('Ready', 'True', 'KubeletReady'),
          cond('MemoryPressure', 'False', 'KubeletHasSufficientMemory'),
          cond('DiskPressure', 'False', 'KubeletHasNoDiskPressure'),
          cond('PIDPressure', 'False', 'KubeletHasSufficientPID'),
        ],
        addresses: [
          { type: 'InternalIP', address: NODE_IP },
          { type: 'Hostname', address: NODE_NAME },
        ],
        capacity: { cpu: '2', memory: '8Gi', pods: '250' },
        allocatable: { cpu: '2', memory: '8Gi', pods: '250' },
        nodeInfo: {
          kubeletVersion: 'v1.33.13-minimesh',
          kubeProxyVersion: '',
          containerRuntimeVersion: 'minimesh://processes',
          operatingSystem: 'linux',
          architecture: 'amd64',
          osImage: 'minimesh local cluster',
          kernelVersion: '',
          machineID: '',
          systemUUID: '',
          bootID: '',
        },
      },
    },
    'application/merge-patch+json',
  );
}

function hostsFor(podIp: string, pod: KubeObject): string {
  return renderHosts(podIp, pod, services.values());
}

let hostsTimer: NodeJS.Timeout | undefined;
function refreshAllHosts(): void {
  if (hostsTimer) return;
  hostsTimer = setTimeout(() => {
    hostsTimer = undefined;
    for (const r of runners.values()) r.refreshHosts();
  }, 50);
}

async function bind(pod: KubeObject): Promise<void> {
  const { namespace, name } = pod.metadata;
  try {
    await client.request('POST', `/api/v1/namespaces/${namespace}/pods/${name}/binding`, {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name, namespace, uid: pod.metadata.uid },
      target: { apiVersion: 'v1', kind: 'Node', name: NODE_NAME },
    });
    log.info('bound pod', { pod: `${namespace}/${name}` });
  } catch (err) {
    if (!(err instanceof KubeApiError && (err.status === 409 || err.status === 404)))
      log.warn('bind failed', { pod: `${namespace}/${name}`, err: String(err) });
  }
}

/** Stops a deleted pod's containers within its grace period, then removes the pod object (as the kubelet does). */
async function finishDeletion(pod: KubeObject): Promise<void> {
  const uid = pod.metadata.uid;
  if (finishing.has(uid)) return;
  finishing.add(uid);
  try {
    const runner = runners.get(uid);
    const grace = Number(pod.metadata.deletionGracePeriodSeconds ?? 30) * 1000;
    if (runner) await runner.stop(grace);
    runners.delete(uid);
    const { namespace, name } = pod.metadata;
    await client
      .request('DELETE', `/api/v1/namespaces/${namespace}/pods/${name}`, {
        apiVersion: 'v1',
        kind: 'DeleteOptions',
        gracePeriodSeconds: 0,
        preconditions: { uid },
      })
      .catch((err: unknown) => {
        if (!(err instanceof KubeApiError && (err.status === 404 || err.status === 409))) throw err;
      });
  } catch (err) {
    log.warn('deleting pod failed', { err: String(err) });
  } finally {
    finishing.delete(uid);
  }
}

function onPod(type: string, pod: KubeObject): void {
  const uid = pod.metadata.uid as string;
  if (type === 'DELETED') {
    const runner = runners.get(uid);
    runners.delete(uid);
    if (runner) void runner.stop(0);
    return;
  }
  if (!pod.spec.nodeName) {
    // Like a real cluster, a pod that names another scheduler stays Pending: tests that want a pod
    // object the agent never runs set spec.schedulerName (e.g. "none").
    const scheduler = pod.spec.schedulerName ?? 'default-scheduler';
    if (!pod.metadata.deletionTimestamp && scheduler === 'default-scheduler') void bind(pod);
    return;
  }
  if (pod.spec.nodeName !== NODE_NAME) return;
  const runner = runners.get(uid);
  if (pod.metadata.deletionTimestamp) {
    void finishDeletion(pod);
    return;
  }
  if (runner) {
    runner.pod = pod;
    return;
  }
  if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') return;
  const r = new PodRunner(pod, {
    client,
    log,
    ips,
    podsDir: paths.pods,
    createdMountpointsFile: paths.createdMountpoints,
    renderHosts: hostsFor,
  });
  runners.set(uid, r);
  log.info('running pod', { pod: `${pod.metadata.namespace}/${pod.metadata.name}`, uid });
  void r.run();
}

/** Removes pod namespaces, mounts and files a previous agent left behind. */
async function cleanStale(): Promise<void> {
  for (const ns of listNetns(POD_NETNS_PREFIX)) await destroyNetns(ns);
  for (const m of mountsUnder(paths.pods)) {
    try {
      execFileSync('umount', ['-l', m]);
    } catch {
      /* gone */
    }
  }
  if (existsSync(paths.pods)) rmSync(paths.pods, { recursive: true, force: true });
}

async function main(): Promise<void> {
  await cleanStale();
  await registerNode();
  setInterval(
    () => void heartbeat().catch((err: Error) => log.warn('node heartbeat failed', { err: err.message })),
    20_000,
  );
  client.watch(
    '/api/v1/services',
    (ev) => {
      const key = `${ev.object.metadata.namespace}/${ev.object.metadata.name}`;
      if (ev.type === 'DELETED') services.delete(key);
      else services.set(key, ev.object);
      serviceProxy.setService(key, ev.type === 'DELETED' ? undefined : ev.object);
      refreshAllHosts();
    },
    (items) => {
      services.clear();
      for (const s of items) services.set(`${s.metadata.namespace}/${s.metadata.name}`, s);
      serviceProxy.resetServices(items);
      refreshAllHosts();
    },
  );
  client.watch(
    '/apis/discovery.k8s.io/v1/endpointslices',
    (ev) =>
      serviceProxy.setSlice(
        `${ev.object.metadata.namespace}/${ev.object.metadata.name}`,
        ev.type === 'DELETED' ? undefined : ev.object,
      ),
    (items) => serviceProxy.resetSlices(items),
  );
  client.watch(
    '/api/v1/pods',
    (ev) => onPod(ev.type, ev.object),
    (items) => {
      const seen = new Set(items.map((p) => p.metadata.uid as string));
      for (const [uid, r] of runners) {
        if (!seen.has(uid)) {
          runners.delete(uid);
          void r.stop(0);
        }
      }
      for (const p of items) onPod('ADDED', p);
    },
  );
  log.info('node agent ready', { node: NODE_NAME });
}

let exiting = false;
for (const sig of ['SIGTERM', 'SIGINT'] as const) {
  process.on(sig, () => {
    if (exiting) return;
    exiting = true;
    log.info('node agent stopping (pods keep running until the cluster is taken down)');
    process.exit(0);
  });
}

main().catch((err: Error) => {
  log.error('node agent failed', { err: err.message });
  process.exit(1);
});
