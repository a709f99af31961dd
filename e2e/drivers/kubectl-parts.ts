// What the local and k3d drivers share: everything a user does with kubectl once a cluster exists —
// a netadmin debug container for commands in a pod's network namespace (the pod's own proxy-init
// image), the nat table through it, and container logs.
import { randomBytes } from 'node:crypto';
import type { RunResult } from '../src/tools.js';

type Kubectl = (args: readonly string[], input?: string) => Promise<RunResult>;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface KubectlParts {
  execInPod(namespace: string, pod: string, command: readonly string[]): Promise<RunResult>;
  natRules(namespace: string, pod: string): Promise<string>;
  logs(namespace: string, pod: string, container: string): Promise<string>;
}

/**
 * @param debugImage the image of the debug container (one with the iptables binaries: proxy-init's; no shell)
 * @param pullPolicy Never where images are imported, never pulled (the local cluster)
 */
export function kubectlParts(kubectl: Kubectl, debugImage: string, pullPolicy: 'Never' | 'IfNotPresent'): KubectlParts {
  /** Runs a command in an ephemeral debug container that shares the pod's network namespace. */
  async function debug(namespace: string, pod: string, command: readonly string[]): Promise<RunResult> {
    const name = `mm-debug-${randomBytes(3).toString('hex')}`;
    const started = await kubectl([
      'debug',
      '-n',
      namespace,
      pod,
      `--container=${name}`,
      '--profile=netadmin',
      '--quiet',
      `--image=${debugImage}`,
      `--image-pull-policy=${pullPolicy}`,
      '--',
      ...command,
    ]);
    if (started.code !== 0) return started;
    for (let i = 0; i < 120; i++) {
      const st = await kubectl([
        'get',
        'pod',
        '-n',
        namespace,
        pod,
        '-o',
        `jsonpath={.status.ephemeralContainerStatuses[?(@.name=="${name}")].state}`,
      ]);
      const state = st.stdout.trim()
        ? (JSON.parse(st.stdout) as Record<string, { exitCode?: number; reason?: string; message?: string }>)
        : {};
      if (state.terminated) {
        const logs = await kubectl(['logs', '-n', namespace, pod, '-c', name]);
        return { code: Number(state.terminated.exitCode), stdout: logs.stdout, stderr: logs.stderr };
      }
      const reason = state.waiting?.reason ?? '';
      if (/ErrImage|ImagePull|CreateContainer/.test(reason))
        return { code: 1, stdout: '', stderr: `debug container ${name}: ${reason}: ${state.waiting?.message ?? ''}` };
      await sleep(500);
    }
    return { code: 1, stdout: '', stderr: `debug container ${name} in ${namespace}/${pod} did not finish in 60s` };
  }

  return {
    execInPod: debug,
    async natRules(namespace, pod) {
      // Whichever backend proxy-init used (nft by default, legacy on request): both listings, one debug
      // container each (the proxy-init image has no shell to run both in one).
      const out: string[] = [];
      for (const bin of ['iptables-nft-save', 'iptables-legacy-save']) {
        const r = await debug(namespace, pod, [bin, '-t', 'nat']);
        if (r.code === 0) out.push(r.stdout);
      }
      return out.join('\n');
    },
    async logs(namespace, pod, container) {
      const r = await kubectl(['logs', '-n', namespace, pod, '-c', container]);
      return r.code === 0 ? r.stdout : '';
    },
  };
}
