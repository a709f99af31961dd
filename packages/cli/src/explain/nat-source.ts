// Where the pod's nat table comes from — pluggable, because reading another pod's netfilter state
// needs different means on different clusters:
//   file            --nat-file FILE (offline; e.g. saved with kubectl debug, see kubectlDebugHint)
//   local-cluster   the minimesh local cluster: `iptables-*-save -t nat` in the pod's network namespace
// A real cluster has no way in from the outside without a privileged debug container, so there we
// print the kubectl debug command and ask for --nat-file.
import { readFile } from 'node:fs/promises';

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

/** The save binaries to try, in order; proxy-init's default mode is legacy, as in the seed. */
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

export function localClusterNatSource(): NatSource {
  return execNatSource(async (ns, pod, argv) => {
    const { execInPod } = await import('@minimesh/local-cluster');
    return execInPod(ns, pod, argv);
  }, 'the local cluster (iptables-save in the pod network namespace)');
}

/** The seed's way in: a netadmin debug container sharing the pod's network namespace. */
export function kubectlDebugHint(namespace: string, pod: string, container: string | undefined): string {
  const target = container ? ` --target=${container}` : '';
  return (
    `kubectl debug -n ${namespace} ${pod} -i --quiet --image=ubuntu:22.04${target} --profile=netadmin -- ` +
    `sh -c 'apt-get update -qq >/dev/null && apt-get install -qq -y iptables >/dev/null && iptables-legacy-save -t nat' > ${pod}.nat`
  );
}
