// Simulated nodes: kwok (sigs.k8s.io/kwok), built from the Go module proxy by scripts/build-kwok.sh and
// cached like the Kubernetes binaries, registers fake Nodes with the real API server and plays their
// kubelets: it keeps their Leases and conditions fresh and makes their pods Running, Ready and given an
// IP, with no container anywhere. The real scheduler, endpointslice controller and watch streams (and
// minimesh's controllers) then see a cluster of thousands of pods on one machine.
//
// The fake Nodes carry the taint kwok.x-k8s.io/node=fake:NoSchedule, so no real pod lands there (only
// pods that tolerate it, such as the workload generator's), and the label type=kwok for nodeSelectors.
// kwok runs detached under the state directory's pid files, so `npm run cluster -- down` stops it too.
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { adminClient } from './cluster.js';
import { KubeApiError, type KubeClient, type KubeObject } from './kube-client.js';
import { cacheDir, packageDir, statePaths, stateDir } from './paths.js';
import { isRunning, startDetached, stopProcess } from './procs.js';

export const KWOK_VERSION = process.env.MINIMESH_KWOK_VERSION ?? 'v0.8.0';
/** The annotation kwok selects its nodes by (--manage-nodes-with-annotation-selector). */
export const SIMULATED_NODE_ANNOTATION = 'kwok.x-k8s.io/node';
/** Labels of every simulated Node: a workload's nodeSelector. */
export const SIMULATED_NODE_LABELS = { type: 'kwok' } as const;
/** The taint that keeps real pods off the simulated nodes, and the toleration that lets a workload on. */
export const SIMULATED_NODE_TAINT = { key: 'kwok.x-k8s.io/node', value: 'fake', effect: 'NoSchedule' } as const;
export const SIMULATED_NODE_TOLERATION = {
  key: SIMULATED_NODE_TAINT.key,
  operator: 'Equal',
  value: SIMULATED_NODE_TAINT.value,
  effect: SIMULATED_NODE_TAINT.effect,
} as const;
/**
 * Where kwok takes pod IPs from: inside 10.0.0.0/8 (the cluster networks minimesh and Linkerd assume by
 * default) and apart from the real node's pods (10.23.0.0/16) and Services (10.247.0.0/16). Nothing is
 * ever routed to these addresses: they exist only in the API.
 */
export const SIMULATED_POD_CIDR = '10.64.0.0/12';
/** Simulated nodes are named kwok-0, kwok-1, ... */
export const simulatedNodeName = (i: number): string => `kwok-${i}`;

type Log = (msg: string) => void;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function kwokPaths(): { dir: string; bin: string; stages: string } {
  const dir = join(cacheDir(), 'kwok', KWOK_VERSION);
  return { dir, bin: join(dir, 'kwok'), stages: join(dir, 'stages.yaml') };
}

/** Builds kwok and its stage file into the cache unless they are there (about 2 minutes the first time). */
export function buildKwok(log: Log = () => {}): ReturnType<typeof kwokPaths> {
  const paths = kwokPaths();
  if (existsSync(paths.bin) && existsSync(paths.stages)) return paths;
  // The build's output goes to a log file (a test that needs kwok prints no build), shown when it fails.
  const logFile = join(cacheDir(), 'logs', 'build-kwok.log');
  mkdirSync(dirname(logFile), { recursive: true });
  log(`kwok ${KWOK_VERSION} missing: building it (scripts/build-kwok.sh, about 2 minutes), output in ${logFile}`);
  const fd = openSync(logFile, 'w');
  try {
    execFileSync('bash', [join(packageDir, 'scripts', 'build-kwok.sh')], {
      stdio: ['ignore', fd, fd],
      env: { ...process.env, MINIMESH_KWOK_VERSION: KWOK_VERSION, MINIMESH_CACHE: cacheDir() },
    });
  } catch {
    const tail = readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-20).join('\n');
    throw new Error(`building kwok ${KWOK_VERSION} failed (scripts/build-kwok.sh); the end of ${logFile}:\n${tail}`);
  } finally {
    closeSync(fd);
  }
  return paths;
}

/** The Node object of one simulated node (kwok fills its status: conditions, addresses, capacity). */
export function simulatedNode(i: number): Record<string, unknown> {
  const name = simulatedNodeName(i);
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      annotations: { [SIMULATED_NODE_ANNOTATION]: 'fake' },
      labels: {
        ...SIMULATED_NODE_LABELS,
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        // Linkerd's destination reads the zone of a node for its topology hints; give it one.
        'topology.kubernetes.io/zone': 'kwok',
      },
    },
    spec: { taints: [{ ...SIMULATED_NODE_TAINT }] },
  };
}

export interface SimulatedNodesOptions {
  nodes: number;
  log?: Log;
  /** How long to wait for every node to be Ready (default 120 s). */
  timeoutMs?: number;
}

/**
 * Starts kwok (once) against the running cluster and makes sure simulated nodes kwok-0..kwok-(n-1)
 * exist and are Ready; nodes past n are deleted (with their pods, which the pod garbage collector
 * removes). Idempotent.
 */
export async function ensureSimulatedNodes(opts: SimulatedNodesOptions): Promise<string[]> {
  const log = opts.log ?? (() => {});
  if (!Number.isInteger(opts.nodes) || opts.nodes < 0 || opts.nodes > 1000)
    throw new Error(`simulated nodes: ${opts.nodes} is not valid: expected a whole number from 0 to 1000`);
  const p = statePaths(stateDir());
  if (!existsSync(p.adminKubeconfig))
    throw new Error(`simulated nodes: no cluster at ${p.dir}: run npm run cluster -- up first`);
  const kwok = buildKwok(log);
  const admin = adminClient();
  if (!isRunning(p, 'kwok')) {
    log(`starting kwok ${KWOK_VERSION} (simulated nodes, pod IPs from ${SIMULATED_POD_CIDR})`);
    startDetached(p, 'kwok', kwok.bin, [
      `--kubeconfig=${p.adminKubeconfig}`,
      `--config=${kwok.stages}`,
      '--manage-all-nodes=false',
      `--manage-nodes-with-annotation-selector=${SIMULATED_NODE_ANNOTATION}=fake`,
      `--cidr=${SIMULATED_POD_CIDR}`,
      '--node-ip=10.23.0.1',
      '--node-lease-duration-seconds=40',
    ]);
  }
  const names: string[] = [];
  for (let i = 0; i < opts.nodes; i++) {
    names.push(simulatedNodeName(i));
    await createIfMissing(admin, '/api/v1/nodes', simulatedNode(i));
  }
  const existing = await listSimulatedNodes(admin);
  for (const name of existing.filter((n) => !names.includes(n))) {
    log(`deleting simulated node ${name}`);
    await admin.request('DELETE', `/api/v1/nodes/${name}`).catch(() => undefined);
  }
  const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
  for (;;) {
    if (!isRunning(p, 'kwok')) throw new Error(`simulated nodes: kwok exited (log: ${join(p.logs, 'kwok.log')})`);
    const list = await admin.request<{ items: KubeObject[] }>(
      'GET',
      `/api/v1/nodes?labelSelector=${encodeURIComponent('type=kwok')}`,
    );
    const ready = list.items.filter((n) =>
      (n.status?.conditions ?? []).some(
        (c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True',
      ),
    ).length;
    if (ready >= names.length) break;
    if (Date.now() > deadline)
      throw new Error(
        `simulated nodes: ${ready} of ${names.length} Ready after ${Math.round((opts.timeoutMs ?? 120_000) / 1000)} s (log: ${join(p.logs, 'kwok.log')})`,
      );
    await sleep(500);
  }
  if (names.length > 0) log(`${names.length} simulated node(s) Ready`);
  return names;
}

async function listSimulatedNodes(admin: KubeClient): Promise<string[]> {
  const list = await admin.request<{ items: Array<{ metadata: { name: string } }> }>(
    'GET',
    `/api/v1/nodes?labelSelector=${encodeURIComponent('type=kwok')}`,
  );
  return list.items.map((n) => n.metadata.name);
}

/** Deletes every simulated node and stops kwok (the cluster stays up). */
export async function removeSimulatedNodes(log: Log = () => {}): Promise<void> {
  const p = statePaths(stateDir());
  const admin = adminClient();
  for (const name of await listSimulatedNodes(admin).catch(() => [])) {
    await admin.request('DELETE', `/api/v1/nodes/${name}`).catch(() => undefined);
  }
  await stopProcess(p, 'kwok');
  log('simulated nodes removed, kwok stopped');
}

async function createIfMissing(admin: KubeClient, collection: string, obj: Record<string, unknown>): Promise<void> {
  try {
    await admin.request('POST', collection, obj);
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 409)) throw err;
  }
}
