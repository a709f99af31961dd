// Where the pod's nat table comes from — pluggable:
//   file             --nat-file FILE (offline; e.g. saved with kubectl debug, see kubectlDebugHint)
//   debug container  any cluster: an ephemeral container in the pod (the pod's own proxy-init image,
//                    NET_ADMIN and NET_RAW, as `kubectl debug --profile=netadmin`) runs
//                    `iptables-*-save -t nat` in the pod's network namespace; its log is the table.
//   minimesh-cni     CNI mode: the table the plugin read back right after writing the pod's rules,
//                    served by the installer on the pod's node (a namespace that enforces Pod
//                    Security "restricted" refuses the NET_ADMIN debug container, too).
// A user reads the rules the way they can on their own cluster: nothing here needs node access.
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { KubeApiError, type KubeClient } from '@minimesh/kube';

export interface NatSource {
  /** Shown in the output: where the rules were read. */
  describe: string;
  /** The pod's nat table for one address family (IPv6 lives in ip6tables). */
  read(namespace: string, pod: string, family?: 4 | 6): Promise<string>;
}

export class NatSourceError extends Error {
  readonly code = 'MINIMESH_CLI_NAT_SOURCE';
}

export function fileNatSource(path: string): NatSource {
  return {
    describe: `file ${path}`,
    async read() {
      try {
        return await readFile(path, 'utf8');
      } catch (err) {
        throw new NatSourceError(`--nat-file ${path}: ${(err as Error).message}`, { cause: err });
      }
    },
  };
}

/** The save binaries to try, in order; proxy-init's default mode is legacy, as in the Linkerd tutorial. */
export const SAVE_BINARIES = ['iptables-legacy-save', 'iptables-nft-save', 'iptables-save'] as const;

export function saveBinaries(family: 4 | 6): string[] {
  return family === 6 ? SAVE_BINARIES.map((b) => b.replace(/^iptables/, 'ip6tables')) : [...SAVE_BINARIES];
}

export type ExecInPod = (
  namespace: string,
  pod: string,
  argv: string[],
) => Promise<{ code: number; stdout: string; stderr: string }>;

/** Runs the save binaries in the pod's network namespace; prefers the one that shows proxy-init's chains. */
export function execNatSource(exec: ExecInPod, describe: string): NatSource {
  return {
    describe,
    async read(namespace, pod, family = 4) {
      const failures: string[] = [];
      let fallback: string | undefined;
      for (const bin of saveBinaries(family)) {
        const r = await exec(namespace, pod, [bin, '-t', 'nat']);
        if (r.code !== 0) {
          failures.push(`${bin}: exit ${r.code}${r.stderr.trim() ? ` (${r.stderr.trim().split('\n')[0]})` : ''}`);
          continue;
        }
        if (r.stdout.includes('PROXY_INIT_')) return r.stdout;
        fallback ??= r.stdout;
      }
      if (fallback !== undefined) return fallback;
      throw new NatSourceError(`cannot read the nat table of ${namespace}/${pod}: ${failures.join('; ')}`);
    },
  };
}

/**
 * The program the debug container runs (`node -e`): every save binary of one family, each output
 * fenced with its exit code. Node, because the images have no shell: proxy-init's image carries node
 * (its runtime) and the save binaries, nothing else.
 */
export function debugScript(family: 4 | 6): string {
  const bins = JSON.stringify(saveBinaries(family));
  const fence = JSON.stringify(FENCE);
  return `const { spawnSync } = require('node:child_process');
for (const bin of ${bins}) {
  const r = spawnSync(bin, ['-t', 'nat'], { encoding: 'utf8' });
  let text = r.error ? bin + ': ' + r.error.message : (r.stdout ?? '') + (r.stderr ?? '');
  if (text && !text.endsWith('\\n')) text += '\\n';
  const code = r.error ? 127 : (r.status ?? 1);
  process.stdout.write(${fence} + ' ' + bin + '\\n' + text + ${fence} + ' exit ' + code + '\\n');
}`;
}
const FENCE = '### minimesh-explain';

/** Splits the debug container's log back into one exec result per save binary. */
export function parseDebugOutput(log: string): Map<string, { code: number; stdout: string; stderr: string }> {
  const out = new Map<string, { code: number; stdout: string; stderr: string }>();
  const re = new RegExp(`^${FENCE} (\\S+)\n([\\s\\S]*?)^${FENCE} exit (\\d+)$`, 'gm');
  for (const m of log.matchAll(re)) {
    const code = Number(m[3]);
    const text = m[2] ?? '';
    out.set(m[1] as string, { code, stdout: code === 0 ? text : '', stderr: code === 0 ? '' : text });
  }
  return out;
}

/** The parts of the Kubernetes API a debug container needs (kubeDebugContainerApi maps them onto a KubeClient). */
export interface DebugContainerApi {
  readNamespacedPod(req: { name: string; namespace: string }): Promise<DebugPod>;
  replaceNamespacedPodEphemeralcontainers(req: { name: string; namespace: string; body: DebugPod }): Promise<unknown>;
  readNamespacedPodLog(req: { name: string; namespace: string; container: string }): Promise<string>;
}

/** The three requests over the shared client: read the pod, PUT its ephemeralcontainers, read a container's log. */
export function kubeDebugContainerApi(client: KubeClient): DebugContainerApi {
  const podPath = (namespace: string, name: string) =>
    `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`;
  return {
    readNamespacedPod: ({ name, namespace }) => client.requestOk<DebugPod>('GET', podPath(namespace, name)),
    replaceNamespacedPodEphemeralcontainers: ({ name, namespace, body }) =>
      client.requestOk('PUT', `${podPath(namespace, name)}/ephemeralcontainers`, body),
    readNamespacedPodLog: async ({ name, namespace, container }) =>
      String(
        await client.requestOk<unknown>(
          'GET',
          `${podPath(namespace, name)}/log?container=${encodeURIComponent(container)}`,
          undefined,
          // The log is text/plain whatever is asked; the API server refuses an Accept without JSON (406).
          { accept: 'application/json, */*' },
        ),
      ),
  };
}

export interface DebugPod {
  metadata?: { resourceVersion?: string };
  spec?: {
    initContainers?: { name: string; image?: string; imagePullPolicy?: string }[];
    ephemeralContainers?: Record<string, unknown>[];
  };
  status?: {
    phase?: string;
    ephemeralContainerStatuses?: {
      name: string;
      state?: { terminated?: { exitCode: number }; waiting?: { reason?: string; message?: string } };
    }[];
  };
}

export interface DebugContainerOptions {
  /** Image with node and the iptables save binaries; default: the pod's proxy-init image, else this one. */
  fallbackImage: string;
  timeoutMs?: number;
  pollMs?: number;
}

/** proxy-init's container name in an injected pod (the injector's). */
export const PROXY_INIT_CONTAINER = 'minimesh-init';

/**
 * Reads the nat table with an ephemeral debug container in the pod, as `kubectl debug
 * --profile=netadmin` does: it shares the pod's network namespace, has NET_ADMIN and NET_RAW and no
 * other privilege, runs the save binaries once and exits; its log is the table. The image is the
 * pod's own proxy-init image (already on the node: it ran the init container), so nothing is pulled.
 * Ephemeral containers stay in the pod's spec (Kubernetes cannot remove them); each read adds one.
 */
export function debugContainerNatSource(api: DebugContainerApi, opts: DebugContainerOptions): NatSource {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const pollMs = opts.pollMs ?? 250;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  return {
    describe: 'an ephemeral debug container (NET_ADMIN, NET_RAW) running iptables-save in the pod',
    async read(namespace, podName, family = 4) {
      const name = `minimesh-explain-${randomBytes(3).toString('hex')}`;
      let pod = await api.readNamespacedPod({ name: podName, namespace });
      // A debug container starts in any pod whose sandbox is up, Running or still Pending on its init
      // containers (a native sidecar that is not Ready yet); not in one that has finished.
      const phase = pod.status?.phase;
      if (phase === 'Succeeded' || phase === 'Failed' || phase === undefined)
        throw new NatSourceError(
          `cannot read the nat table of ${namespace}/${podName}: the pod is ${phase ?? 'not started'} (a debug container needs a pod that runs)`,
        );
      const init = pod.spec?.initContainers?.find((c) => c.name === PROXY_INIT_CONTAINER);
      const image = init?.image ?? opts.fallbackImage;
      const container = {
        name,
        image,
        imagePullPolicy: init?.imagePullPolicy ?? 'IfNotPresent',
        command: ['node', '-e', debugScript(family)],
        securityContext: { capabilities: { add: ['NET_ADMIN', 'NET_RAW'] } },
        terminationMessagePolicy: 'File',
      };
      for (let attempt = 0; ; attempt++) {
        try {
          await api.replaceNamespacedPodEphemeralcontainers({
            name: podName,
            namespace,
            body: {
              ...pod,
              spec: { ...pod.spec, ephemeralContainers: [...(pod.spec?.ephemeralContainers ?? []), container] },
            },
          });
          break;
        } catch (err) {
          // 409: the pod changed since we read it; read it again.
          if (kubeCode(err) !== 409 || attempt >= 4) throw debugError(namespace, podName, err);
          pod = await api.readNamespacedPod({ name: podName, namespace });
        }
      }
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const now = await api.readNamespacedPod({ name: podName, namespace });
        const st = now.status?.ephemeralContainerStatuses?.find((s) => s.name === name);
        if (st?.state?.terminated) break;
        const waiting = st?.state?.waiting;
        if (waiting?.reason && /ErrImage|ImagePull|InvalidImageName|CreateContainer/.test(waiting.reason))
          throw new NatSourceError(
            `cannot read the nat table of ${namespace}/${podName}: debug container ${name} (image ${image}): ${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`,
          );
        if (Date.now() > deadline)
          throw new NatSourceError(
            `cannot read the nat table of ${namespace}/${podName}: debug container ${name} did not finish in ${timeoutMs / 1000}s`,
          );
        await sleep(pollMs);
      }
      const log = await api.readNamespacedPodLog({ name: podName, namespace, container: name });
      const results = parseDebugOutput(String(log));
      return execNatSource(async (_ns, _pod, argv) => {
        return results.get(argv[0] as string) ?? { code: 127, stdout: '', stderr: `${argv[0]}: no output` };
      }, '').read(namespace, podName, family);
    },
  };
}

function kubeCode(err: unknown): number | undefined {
  if (err instanceof KubeApiError) return err.statusCode;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'number' ? code : undefined;
}

function debugError(namespace: string, pod: string, err: unknown): NatSourceError {
  if (err instanceof KubeApiError)
    return new NatSourceError(
      `cannot add a debug container to ${namespace}/${pod}: ${err.statusCode === 0 ? err.detail : `HTTP ${err.statusCode}: ${err.detail}`}`,
      { cause: err },
    );
  const e = err as { body?: unknown; message?: string };
  let msg = e.message ?? String(err);
  if (typeof e.body === 'string') {
    try {
      msg = (JSON.parse(e.body) as { message?: string }).message ?? msg;
    } catch {
      /* not JSON */
    }
  }
  return new NatSourceError(`cannot add a debug container to ${namespace}/${pod}: ${msg}`, { cause: err });
}

/** The Linkerd tutorial's way in: a netadmin debug container sharing the pod's network namespace. */
export function kubectlDebugHint(namespace: string, pod: string, container: string | undefined): string {
  const target = container ? ` --target=${container}` : '';
  return (
    `kubectl debug -n ${namespace} ${pod} -i --quiet --image=ubuntu:22.04${target} --profile=netadmin -- ` +
    `sh -c 'apt-get update -qq >/dev/null && apt-get install -qq -y iptables >/dev/null && iptables-legacy-save -t nat' > ${pod}.nat`
  );
}

/** CNI mode's installers: their component label and admin port (the chart's templates/cni.yaml). */
export const CNI_INSTALLER_SELECTOR = 'minimesh.io/control-plane-component=cni';
export const CNI_INSTALLER_PORT = 9997;

interface CniRecord {
  namespace: string;
  name: string;
  uid?: string;
  node?: string;
  appliedAt: string;
  mode: string;
  saved: Record<string, string>;
}

/**
 * Reads what minimesh-cni wrote into a CNI-mode pod: the installer on the pod's node serves the
 * plugin's record of each sandbox (GET /pods, through the API server's pod proxy), whose `saved` is
 * `iptables-save -t nat` as the plugin read it right after its transaction.
 */
export function cniRecordNatSource(
  client: KubeClient,
  opts: { controlPlaneNamespace: string; node: string | undefined; uid: string | undefined },
): NatSource {
  const cp = opts.controlPlaneNamespace;
  let described = `the record minimesh-cni keeps on node ${opts.node ?? '?'}`;
  return {
    get describe() {
      return described;
    },
    async read(namespace, pod, family = 4) {
      const what = `cannot read the nat table minimesh-cni wrote for ${namespace}/${pod}`;
      if (!opts.node) throw new NatSourceError(`${what}: the pod is not scheduled on a node`);
      let installers;
      try {
        installers = await client.requestOk<{ items: { metadata?: { name?: string } }[] }>(
          'GET',
          `/api/v1/namespaces/${encodeURIComponent(cp)}/pods?labelSelector=${encodeURIComponent(CNI_INSTALLER_SELECTOR)}&fieldSelector=${encodeURIComponent(`spec.nodeName=${opts.node}`)}`,
        );
      } catch (err) {
        throw new NatSourceError(`${what}: listing the minimesh-cni installers in ${cp}: ${(err as Error).message}`, {
          cause: err,
        });
      }
      const installer = installers.items[0]?.metadata?.name;
      if (!installer)
        throw new NatSourceError(
          `${what}: no minimesh-cni installer runs on node ${opts.node} (kubectl -n ${cp} get daemonset minimesh-cni)`,
        );
      const q = `namespace=${encodeURIComponent(namespace)}&name=${encodeURIComponent(pod)}`;
      let records: CniRecord[];
      try {
        records = (
          await client.requestOk<{ items: CniRecord[] }>(
            'GET',
            `/api/v1/namespaces/${encodeURIComponent(cp)}/pods/${installer}:${CNI_INSTALLER_PORT}/proxy/pods?${q}`,
            undefined,
            { accept: 'application/json, */*' },
          )
        ).items;
      } catch (err) {
        throw new NatSourceError(`${what}: installer ${cp}/${installer}: ${(err as Error).message}`, { cause: err });
      }
      const mine = records
        .filter((r) => opts.uid === undefined || r.uid === undefined || r.uid === opts.uid)
        .sort((a, b) => b.appliedAt.localeCompare(a.appliedAt))[0];
      if (!mine)
        throw new NatSourceError(
          `${what}: installer ${cp}/${installer} has no record of it: the plugin did not write its rules (is its network validator failing?)`,
        );
      const text = mine.saved[String(family)];
      if (text === undefined)
        throw new NatSourceError(
          `${what}: minimesh-cni wrote no IPv${family} rules for it (proxy-init's --ipv6 was off)`,
        );
      described = `minimesh-cni's record on node ${opts.node} (installer ${installer}): the table it read back right after writing the rules at ${mine.appliedAt}, iptables mode ${mine.mode}`;
      return text;
    },
  };
}
