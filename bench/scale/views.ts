// What every Get stream should see: the ready endpoints of each Service as the API's EndpointSlices say,
// and the comparison of the streams' final views with it (bench/scale and the e2e scale spec).
import type { KubeClient, KubeObject } from '@minimesh/local-cluster';

/** "name.namespace.svc.cluster.local:80" of a workload Service's EndpointSlice (undefined for others). */
export function sliceAuthority(s: KubeObject, namespacePrefix = 'mm-scale-'): string | undefined {
  const svc = s.metadata?.labels?.['kubernetes.io/service-name'];
  if (!svc || !String(s.metadata.namespace).startsWith(namespacePrefix)) return undefined;
  return `${svc}.${s.metadata.namespace}.svc.cluster.local:80`;
}

/** Adds a slice's ready endpoints ("ip:port") to its Service's set. */
export function addSlice(out: Map<string, Set<string>>, s: KubeObject, namespacePrefix?: string): void {
  const authority = sliceAuthority(s, namespacePrefix);
  if (!authority) return;
  const port = (s.ports ?? [])[0]?.port;
  const set = out.get(authority) ?? new Set<string>();
  out.set(authority, set);
  for (const e of s.endpoints ?? [])
    if (e.conditions?.ready !== false) for (const a of e.addresses ?? []) set.add(`${a}:${port}`);
}

/** Every workload Service's ready endpoints, listed now. */
export async function apiEndpoints(admin: KubeClient, namespacePrefix?: string): Promise<Map<string, Set<string>>> {
  const out = new Map<string, Set<string>>();
  let cont = '';
  do {
    const page = await admin.request<{ items: KubeObject[]; metadata: { continue?: string } }>(
      'GET',
      `/apis/discovery.k8s.io/v1/endpointslices?limit=500${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`,
    );
    for (const s of page.items) addSlice(out, s, namespacePrefix);
    cont = page.metadata.continue ?? '';
  } while (cont);
  return out;
}

export type Views = Record<string, Array<{ ips: string[]; streams: number }>>;

export interface Divergence {
  /** Streams whose view differs from the API. */
  diverging: number;
  /** Endpoints the API has and a stream lacks (summed over streams). */
  missing: number;
  /** Endpoints a stream has and the API does not. */
  extra: number;
  /** Services the API has that no stream watched. */
  unwatched: number;
  examples: string[];
}

/** Compares the scale-streams client's views (go-clients scale.go, `views`) with the API's endpoints. */
export function compareViews(views: Views, truth: Map<string, Set<string>>): Divergence {
  const d: Divergence = { diverging: 0, missing: 0, extra: 0, unwatched: 0, examples: [] };
  for (const [authority, groups] of Object.entries(views)) {
    const want = truth.get(authority) ?? new Set<string>();
    for (const g of groups) {
      const have = new Set(g.ips);
      const miss = [...want].filter((x) => !have.has(x));
      const more = g.ips.filter((x) => !want.has(x));
      if (miss.length + more.length === 0) continue;
      d.diverging += g.streams;
      d.missing += miss.length * g.streams;
      d.extra += more.length * g.streams;
      if (d.examples.length < 5)
        d.examples.push(
          `${authority} (${g.streams} stream(s)): missing ${miss.slice(0, 3).join(', ') || '-'}; extra ${more.slice(0, 3).join(', ') || '-'}`,
        );
    }
  }
  for (const authority of truth.keys()) if (!views[authority]) d.unwatched++;
  return d;
}
