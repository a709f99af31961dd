// The flags every program that talks to the API server shares, with Linkerd's names for the limit
// (-kube-apiclient-qps / -kube-apiclient-burst), and the one call that turns them into a client.
import type { FlagSpecs } from '@minimesh/runtime';
import { createKubeClient, type KubeClient, type KubeClientOptions } from './client.js';
import { KubeConfigError } from './errors.js';
import { loadKubeConfig, type LoadKubeConfigOptions } from './kubeconfig.js';
import type { RateLimit } from './rate-limit.js';

/** Flag specs to spread into a program's own: --kubeconfig, --kube-apiclient-qps, --kube-apiclient-burst. */
export function kubeFlags(defaults: RateLimit = { qps: 100, burst: 200 }) {
  return {
    kubeconfig: {
      type: 'string',
      default: '',
      description: 'kubeconfig file (default: $KUBECONFIG, then the in-cluster service account, then ~/.kube/config)',
    },
    'kube-apiclient-qps': {
      type: 'string',
      default: String(defaults.qps),
      description: 'requests per second this program may send to the API server (0: no limit)',
    },
    'kube-apiclient-burst': {
      type: 'string',
      default: String(defaults.burst),
      description: 'requests it may send at once above that rate',
    },
  } as const satisfies FlagSpecs;
}

export interface KubeFlagValues {
  kubeconfig: string;
  'kube-apiclient-qps': string;
  'kube-apiclient-burst': string;
}

/** Validates the flags (KubeConfigError, exit 2, naming the flag). */
export function parseKubeFlags(values: KubeFlagValues): { path: string | undefined; rateLimit: RateLimit } {
  const qps = Number(values['kube-apiclient-qps']);
  if (values['kube-apiclient-qps'].trim() === '' || !Number.isFinite(qps) || qps < 0)
    throw new KubeConfigError(
      `--kube-apiclient-qps: ${JSON.stringify(values['kube-apiclient-qps'])} is not valid: expected a number of requests per second (0 or more)`,
    );
  const burst = Number(values['kube-apiclient-burst']);
  if (!/^\d+$/.test(values['kube-apiclient-burst'].trim()) || burst < 1)
    throw new KubeConfigError(
      `--kube-apiclient-burst: ${JSON.stringify(values['kube-apiclient-burst'])} is not valid: expected a whole number of at least 1`,
    );
  return { path: values.kubeconfig || undefined, rateLimit: { qps, burst } };
}

/** Loads the configuration the flags point at and makes the program's one client. */
export async function kubeClientFromFlags(
  values: KubeFlagValues,
  opts: Omit<KubeClientOptions, 'rateLimit'> & Omit<LoadKubeConfigOptions, 'path'>,
): Promise<KubeClient> {
  const { path, rateLimit } = parseKubeFlags(values);
  const config = await loadKubeConfig({ ...opts, path });
  return createKubeClient(config, { ...opts, rateLimit });
}
