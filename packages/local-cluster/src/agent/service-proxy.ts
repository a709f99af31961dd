// A minimal kube-proxy for the node namespace: iptables DNAT from ClusterIP:port to the ready
// endpoints of the Service's EndpointSlices (random choice via the statistic match), plus MASQUERADE
// so replies from a pod on the same bridge come back through the node and get un-NATed. Pods reach
// Services because their default route is the node. Meshed pods do not need it (the proxy resolves
// ClusterIPs through destination), but unmeshed clients and the API server do.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import type { KubeObject } from '../kube-client.js';
import { CLUSTER_CIDR, NODE_NETNS } from '../paths.js';
import type { AgentLog } from './log.js';

const chainFor = (key: string) => `MM-SVC-${createHash('sha256').update(key).digest('hex').slice(0, 16).toUpperCase()}`;

/** The whole nat table of the node namespace, for iptables-restore. Pure. */
export function renderServiceRules(services: Iterable<KubeObject>, slices: Iterable<KubeObject>): string {
  const byService = new Map<string, KubeObject[]>();
  for (const s of slices) {
    const svc = s.metadata?.labels?.['kubernetes.io/service-name'];
    if (!svc || s.addressType !== 'IPv4') continue;
    const key = `${s.metadata.namespace}/${svc}`;
    byService.set(key, [...(byService.get(key) ?? []), s]);
  }
  const chains: string[] = [];
  const rules: string[] = [];
  const sorted = [...services].sort((a, b) =>
    `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`),
  );
  for (const svc of sorted) {
    const ip = svc.spec?.clusterIP;
    if (!ip || ip === 'None') continue;
    const key = `${svc.metadata.namespace}/${svc.metadata.name}`;
    for (const port of (svc.spec.ports ?? []) as KubeObject[]) {
      const protocol = String(port.protocol ?? 'TCP').toLowerCase();
      if (protocol !== 'tcp' && protocol !== 'udp') continue;
      const targets: string[] = [];
      for (const slice of byService.get(key) ?? []) {
        const sp = ((slice.ports ?? []) as KubeObject[]).find(
          (p) => (p.name ?? '') === (port.name ?? '') && String(p.protocol ?? 'TCP').toLowerCase() === protocol,
        );
        if (!sp?.port) continue;
        for (const ep of (slice.endpoints ?? []) as KubeObject[]) {
          if (ep.conditions?.ready === false) continue;
          for (const addr of ep.addresses ?? []) targets.push(`${addr}:${sp.port}`);
        }
      }
      if (targets.length === 0) continue;
      targets.sort();
      const chain = chainFor(`${key}:${port.name ?? ''}:${protocol}`);
      chains.push(`:${chain} - [0:0]`);
      rules.push(
        `-A MM-SERVICES -d ${ip}/32 -p ${protocol} -m ${protocol} --dport ${port.port} -m comment --comment "${key}:${port.name ?? port.port}" -j ${chain}`,
      );
      targets.forEach((t, i) => {
        const left = targets.length - i;
        const pick = left > 1 ? ` -m statistic --mode random --probability ${(1 / left).toFixed(10)}` : '';
        rules.push(`-A ${chain} -p ${protocol}${pick} -j DNAT --to-destination ${t}`);
      });
    }
  }
  return [
    '*nat',
    ':PREROUTING ACCEPT [0:0]',
    ':INPUT ACCEPT [0:0]',
    ':OUTPUT ACCEPT [0:0]',
    ':POSTROUTING ACCEPT [0:0]',
    ':MM-SERVICES - [0:0]',
    ...chains,
    '-A PREROUTING -m comment --comment "minimesh local cluster services" -j MM-SERVICES',
    '-A OUTPUT -m comment --comment "minimesh local cluster services" -j MM-SERVICES',
    `-A POSTROUTING -s ${CLUSTER_CIDR} -m conntrack --ctstate DNAT -m comment --comment "hairpin: replies return through the node" -j MASQUERADE`,
    ...rules,
    'COMMIT',
    '',
  ].join('\n');
}

export class ServiceProxy {
  private readonly services = new Map<string, KubeObject>();
  private readonly slices = new Map<string, KubeObject>();
  private timer?: NodeJS.Timeout;
  private last = '';

  constructor(private readonly log: AgentLog) {}

  setService(key: string, svc: KubeObject | undefined): void {
    if (svc) this.services.set(key, svc);
    else this.services.delete(key);
    this.schedule();
  }

  resetServices(items: KubeObject[]): void {
    this.services.clear();
    for (const s of items) this.services.set(`${s.metadata.namespace}/${s.metadata.name}`, s);
    this.schedule();
  }

  setSlice(key: string, slice: KubeObject | undefined): void {
    if (slice) this.slices.set(key, slice);
    else this.slices.delete(key);
    this.schedule();
  }

  resetSlices(items: KubeObject[]): void {
    this.slices.clear();
    for (const s of items) this.slices.set(`${s.metadata.namespace}/${s.metadata.name}`, s);
    this.schedule();
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.apply();
    }, 100);
  }

  private apply(): void {
    const rules = renderServiceRules(this.services.values(), this.slices.values());
    if (rules === this.last) return;
    try {
      execFileSync('ip', ['netns', 'exec', NODE_NETNS, 'iptables-restore'], {
        input: rules,
        stdio: ['pipe', 'ignore', 'pipe'],
      });
      this.last = rules;
    } catch (err) {
      this.log.warn('service rules not applied', { err: String((err as { stderr?: Buffer }).stderr ?? err) });
    }
  }
}
