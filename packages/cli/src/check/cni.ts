// CNI mode's checks (pure: fetched objects in, results out): the minimesh-cni DaemonSet has a ready
// installer on every node, and each installer reports its node's conflist chained with the plugin
// in it (its /status, read through the API server's pod proxy). cniChecks reads them; checkCni judges.
import type { KubeClient } from '@minimesh/kube';
import { describeKubeError } from '../kube.js';
import { getViaApiServer } from './api-reads.js';
import { fail, ok, type CheckResult } from './types.js';

export const CNI_CATEGORY = 'minimesh-cni';
export const CNI_DAEMONSET = 'minimesh-cni';
export const CNI_ADMIN_PORT = 9997;

export interface DaemonSetLike {
  status?: { desiredNumberScheduled?: number; numberReady?: number; updatedNumberScheduled?: number };
}

/** What an installer's /status says (InstallerStatus of @minimesh/cni), as far as the checks read it. */
export interface InstallerStatusLike {
  ready: boolean;
  reason?: string | null;
  chained: boolean;
  confFile?: string | null;
  plugin?: { path?: string; bytes?: number | null };
}

export interface InstallerProbe {
  pod: string;
  node: string;
  status?: InstallerStatusLike;
  /** Why /status could not be read. */
  error?: string;
}

export interface CniCheckInput {
  namespace: string;
  /** cni.enabled in the mesh configuration. */
  enabled: boolean;
  daemonSet: DaemonSetLike | undefined;
  /** The cluster's nodes (undefined: not readable; the DaemonSet's own counts are used). */
  nodes: string[] | undefined;
  installers: InstallerProbe[];
}

export function checkCni(input: CniCheckInput): CheckResult[] {
  const ns = input.namespace;
  if (!input.enabled && !input.daemonSet) return [];
  if (!input.daemonSet)
    return [
      fail(
        CNI_CATEGORY,
        `the ${CNI_DAEMONSET} DaemonSet exists`,
        `cni.enabled is true in ConfigMap ${ns}/minimesh-config, but there is no DaemonSet ${ns}/${CNI_DAEMONSET}: meshed pods get the network validator and nothing writes their rules`,
        'helm upgrade the release with --set cni.enabled=true (docs/cni.md)',
      ),
    ];
  const results: CheckResult[] = [];
  if (!input.enabled)
    results.push(
      fail(
        CNI_CATEGORY,
        'the injector runs in CNI mode',
        `DaemonSet ${ns}/${CNI_DAEMONSET} runs, but cni.enabled is false in ConfigMap ${ns}/minimesh-config: pods still get proxy-init`,
        'install with --set cni.enabled=true so that both parts agree',
      ),
    );
  const readyOn = new Set(input.installers.filter((i) => i.status?.ready).map((i) => i.node));
  const desc = `the ${CNI_DAEMONSET} DaemonSet is ready on every node`;
  if (input.nodes) {
    const missing = input.nodes.filter((n) => !readyOn.has(n));
    results.push(
      missing.length === 0
        ? ok(CNI_CATEGORY, desc, `${input.nodes.length} of ${input.nodes.length} node(s)`)
        : {
            ...fail(
              CNI_CATEGORY,
              desc,
              `ready on ${input.nodes.length - missing.length} of ${input.nodes.length} node(s); not on ${missing.join(', ')}`,
              `kubectl -n ${ns} get pods -l minimesh.io/control-plane-component=cni -o wide; pods meshed there fail their network validator`,
            ),
            retry: true,
          },
    );
  } else {
    const s = input.daemonSet.status ?? {};
    const desired = s.desiredNumberScheduled ?? 0;
    const ready = s.numberReady ?? 0;
    results.push(
      desired > 0 && ready === desired
        ? ok(CNI_CATEGORY, desc, `${ready} of ${desired} scheduled (the nodes could not be listed)`)
        : { ...fail(CNI_CATEGORY, desc, `${ready} of ${desired} scheduled installers are ready`), retry: true },
    );
  }
  for (const i of [...input.installers].sort((a, b) => a.node.localeCompare(b.node))) {
    const d = `node ${i.node}: the conflist chains minimesh-cni`;
    if (i.error !== undefined) {
      results.push({ ...fail(CNI_CATEGORY, d, `installer ${i.pod}: ${i.error}`), retry: true });
    } else if (i.status?.ready && i.status.chained) {
      results.push(
        ok(
          CNI_CATEGORY,
          d,
          `last in ${i.status.confFile ?? '?'}; plugin ${i.status.plugin?.path ?? '?'} (${((i.status.plugin?.bytes ?? 0) / 1e6).toFixed(1)} MB)`,
        ),
      );
    } else {
      results.push({
        ...fail(CNI_CATEGORY, d, `installer ${i.pod}: ${i.status?.reason ?? 'not ready'}`),
        retry: true,
      });
    }
  }
  return results;
}

/** CNI mode: the mesh configuration's cni.enabled, the DaemonSet, and each installer's /status. */
export async function cniChecks(client: KubeClient, ns: string, timeoutMs: number): Promise<CheckResult[]> {
  let enabled = false;
  let daemonSet: DaemonSetLike | undefined;
  let installers: InstallerProbe[] = [];
  let nodes: string[] | undefined;
  try {
    const cm = await client.get<{ data?: Record<string, string> }>(
      `/api/v1/namespaces/${ns}/configmaps/minimesh-config`,
    );
    const text = cm?.data?.['config.json'];
    if (text) enabled = (JSON.parse(text) as { cni?: { enabled?: boolean } }).cni?.enabled === true;
    daemonSet = await client.get<DaemonSetLike>(`/apis/apps/v1/namespaces/${ns}/daemonsets/${CNI_DAEMONSET}`);
    if (!enabled && !daemonSet) return [];
    const selector = encodeURIComponent('minimesh.io/control-plane-component=cni');
    const pods = await client.requestOk<{
      items: Array<{ metadata?: { name?: string; deletionTimestamp?: string }; spec?: { nodeName?: string } }>;
    }>('GET', `/api/v1/namespaces/${ns}/pods?labelSelector=${selector}`);
    installers = await Promise.all(
      pods.items
        .filter((p) => p.metadata?.deletionTimestamp === undefined && p.spec?.nodeName)
        .map(async (p): Promise<InstallerProbe> => {
          const pod = p.metadata?.name ?? '?';
          const node = p.spec?.nodeName ?? '?';
          const r = await getViaApiServer(
            client,
            `/api/v1/namespaces/${ns}/pods/${pod}:${CNI_ADMIN_PORT}/proxy/status`,
            timeoutMs,
          );
          if (r.status !== 200) return { pod, node, error: r.error ?? `/status answered HTTP ${r.status}` };
          try {
            return { pod, node, status: JSON.parse(r.body) as InstallerStatusLike };
          } catch {
            return { pod, node, error: `/status is not JSON: ${r.body.slice(0, 100)}` };
          }
        }),
    );
    try {
      const list = await client.requestOk<{ items: Array<{ metadata?: { name?: string } }> }>('GET', '/api/v1/nodes');
      nodes = list.items.map((n) => n.metadata?.name ?? '?');
    } catch {
      nodes = undefined;
    }
  } catch (err) {
    return [fail(CNI_CATEGORY, 'the minimesh-cni DaemonSet is readable', describeKubeError(err))];
  }
  return checkCni({ namespace: ns, enabled, daemonSet, nodes, installers });
}
