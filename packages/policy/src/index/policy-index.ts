// The policy index: resources in (apply/delete/reset, from watches or fixtures), answers out
// (inbound policy per workload port, outbound policy per Service port), and the streams that follow
// them. Every change recomputes the answers it can affect and notifies a watcher only when its
// answer changed. Synchronous and pure: no I/O, no timers.
import type { ClusterInfo } from '../cluster-info.js';
import type { EgressAnswer, InboundServer, OutboundPolicy } from '../model.js';
import { classifyEgress, computeEgress } from './egress.js';
import type { WorkloadRecord } from '../resources/workload.js';
import { computeInbound, serverSelects, type InboundResult } from './inbound.js';
import type { ServerSpec } from '../resources/server.js';
import { computeOutbound, lookupServiceIp } from './outbound.js';
import { isRouteKind, ResourceStore, type IndexedKind, type InvalidResource } from './store.js';

export interface PolicyListener<T> {
  update(value: T): void;
  /** The target is gone (workload or Service deleted); no more updates follow. */
  end(reason: string): void;
}

export interface Subscription<T> {
  current: T;
  close(): void;
}

export type WorkloadKind = 'pod' | 'externalworkload';

export interface PolicyIndexOptions {
  /** A resource could not be used (malformed); it has no effect until fixed. */
  onInvalid?: (problem: InvalidResource) => void;
  /** A policy resource is ignored or in conflict for a watched port (reported when it changes). */
  onDiagnostic?: (message: string) => void;
  /** A listener threw; the index goes on with the others. */
  onListenerError?: (err: unknown) => void;
  /** Any change (after the answers were recomputed): the route-status writer looks again. */
  onChange?: (kind: IndexedKind) => void;
}

interface Group<T> {
  json: string;
  value: T;
  diagnostics: string;
  listeners: Set<PolicyListener<T>>;
}

interface InboundKey {
  kind: WorkloadKind;
  namespace: string;
  name: string;
  port: number;
}
interface EgressKey {
  ip: string;
  port: number;
  sourceNamespace: string;
}
interface OutboundKey {
  namespace: string;
  name: string;
  port: number;
  sourceNamespace: string;
}

export class PolicyIndex {
  readonly store: ResourceStore;
  private readonly inboundGroups = new Map<string, Group<InboundServer> & { key: InboundKey }>();
  private readonly outboundGroups = new Map<string, Group<OutboundPolicy> & { key: OutboundKey }>();
  private readonly egressGroups = new Map<string, Group<EgressAnswer> & { key: EgressKey }>();
  // Which groups a change can reach, so that a change touches those and no other (a pod event used to
  // look at every inbound watch of the cluster): inbound groups by workload and by namespace, outbound
  // groups by the Service's namespace and by the client's.
  private readonly inboundByWorkload = new Map<string, Set<string>>();
  private readonly inboundByNamespace = new Map<string, Set<string>>();
  private readonly outboundByNamespace = new Map<string, Set<string>>();
  /**
   * Equal answers are one object, counted by the groups that hold it: the pods of a Deployment mostly
   * have one answer, and the server translates and encodes an answer object once for every stream
   * that gets it (server/policy-server.ts).
   */
  private readonly answers = new Map<string, { value: unknown; holders: number }>();

  constructor(
    readonly cluster: ClusterInfo,
    private readonly opts: PolicyIndexOptions = {},
  ) {
    this.store = new ResourceStore(cluster);
  }

  apply(kind: IndexedKind, obj: unknown): void {
    const meta = (obj as { metadata?: { namespace?: string; name?: string } }).metadata;
    const server = this.serverBefore(kind, meta?.namespace, meta?.name);
    const problem = this.store.apply(kind, obj);
    if (problem) this.opts.onInvalid?.(problem);
    this.changed(kind, meta?.namespace, meta?.name, server);
  }

  delete(kind: IndexedKind, namespace: string, name: string): void {
    const server = this.serverBefore(kind, namespace, name);
    if (!this.store.delete(kind, namespace, name)) return;
    this.changed(kind, namespace, name, server);
  }

  /** For a Server about to change: what it was (it decides the ports of the workloads it selected). */
  private serverBefore(kind: IndexedKind, namespace?: string, name?: string): { before?: ServerSpec } | undefined {
    if (kind !== 'Server' || namespace === undefined || name === undefined) return undefined;
    const before = this.store.get('Server', namespace, name);
    return before ? { before } : {};
  }

  reset(kind: IndexedKind, objs: readonly unknown[]): void {
    for (const p of this.store.reset(kind, objs)) this.opts.onInvalid?.(p);
    this.changed(kind);
  }

  workload(kind: WorkloadKind, namespace: string, name: string): WorkloadRecord | undefined {
    return this.store.get(kind === 'pod' ? 'Pod' : 'ExternalWorkload', namespace, name);
  }

  /** The inbound policy of a workload's port; undefined when the workload is unknown. */
  inbound(kind: WorkloadKind, namespace: string, name: string, port: number): InboundResult | undefined {
    const w = this.workload(kind, namespace, name);
    return w ? computeInbound(this.store, w, port) : undefined;
  }

  watchInbound(
    kind: WorkloadKind,
    namespace: string,
    name: string,
    port: number,
    listener: PolicyListener<InboundServer>,
  ): Subscription<InboundServer> | undefined {
    const key: InboundKey = { kind, namespace, name, port };
    const id = `${kind}/${namespace}/${name}:${port}`;
    let group = this.inboundGroups.get(id);
    if (!group) {
      const result = this.inbound(kind, namespace, name, port);
      if (!result) return undefined;
      group = { key, ...this.groupState(result.server, diagnosticsOf(result)), listeners: new Set() };
      this.inboundGroups.set(id, group);
      addTo(this.inboundByWorkload, workloadId(kind, namespace, name), id);
      addTo(this.inboundByNamespace, namespace, id);
    }
    const g = group;
    g.listeners.add(listener);
    return {
      current: g.value,
      close: () => {
        g.listeners.delete(listener);
        if (g.listeners.size === 0 && this.inboundGroups.get(id) === g) this.dropInbound(id, key);
      },
    };
  }

  /** The outbound policy of a Service port for a client namespace; undefined when the Service is unknown. */
  outbound(namespace: string, name: string, port: number, sourceNamespace: string): OutboundPolicy | undefined {
    const svc = this.store.get('Service', namespace, name);
    return svc ? computeOutbound(this.store, svc, port, sourceNamespace) : undefined;
  }

  /** The Service behind a cluster IP; portDefined is false when the Service has no such port. */
  lookupIp(ip: string, port: number): { namespace: string; name: string; portDefined: boolean } | undefined {
    const hit = lookupServiceIp(this.store, ip, port);
    return hit && { namespace: hit.service.namespace, name: hit.service.name, portDefined: hit.portDefined };
  }

  watchOutbound(
    namespace: string,
    name: string,
    port: number,
    sourceNamespace: string,
    listener: PolicyListener<OutboundPolicy>,
  ): Subscription<OutboundPolicy> | undefined {
    const key: OutboundKey = { namespace, name, port, sourceNamespace };
    const id = `${namespace}/${name}:${port}<${sourceNamespace}`;
    let group = this.outboundGroups.get(id);
    if (!group) {
      const policy = this.outbound(namespace, name, port, sourceNamespace);
      if (!policy) return undefined;
      group = { key, ...this.groupState(policy, this.outboundDiagnostics(namespace, name)), listeners: new Set() };
      this.outboundGroups.set(id, group);
      addTo(this.outboundByNamespace, namespace, id);
      addTo(this.outboundByNamespace, sourceNamespace, id);
    }
    const g = group;
    g.listeners.add(listener);
    return {
      current: g.value,
      close: () => {
        g.listeners.delete(listener);
        if (g.listeners.size === 0 && this.outboundGroups.get(id) === g) this.dropOutbound(id, key);
      },
    };
  }

  /**
   * What a client in `sourceNamespace` is told about `ip`:`port`, an address outside the cluster
   * networks (the caller checks that): the EgressNetwork that classifies it and its routes, or a
   * fallback (forward as it is) when none does.
   */
  egress(ip: string, port: number, sourceNamespace: string): EgressAnswer {
    const net = classifyEgress(this.store, ip, sourceNamespace);
    return net
      ? { kind: 'egress', policy: computeEgress(this.store, net, port, sourceNamespace) }
      : { kind: 'fallback' };
  }

  /** egress(), followed: the answer changes as EgressNetworks and their routes do. */
  watchEgress(
    ip: string,
    port: number,
    sourceNamespace: string,
    listener: PolicyListener<EgressAnswer>,
  ): Subscription<EgressAnswer> {
    const key: EgressKey = { ip, port, sourceNamespace };
    const id = `${ip}|${port}<${sourceNamespace}`;
    let group = this.egressGroups.get(id);
    if (!group) {
      const answer = this.egress(ip, port, sourceNamespace);
      group = { key, ...this.groupState(answer, this.egressDiagnostics(answer)), listeners: new Set() };
      this.egressGroups.set(id, group);
    }
    const g = group;
    g.listeners.add(listener);
    return {
      current: g.value,
      close: () => {
        g.listeners.delete(listener);
        if (g.listeners.size === 0 && this.egressGroups.get(id) === g) {
          this.egressGroups.delete(id);
          this.release(g.json);
        }
      },
    };
  }

  /** Open watches (for metrics). */
  watchCounts(): { inbound: number; outbound: number } {
    let inbound = 0;
    let outbound = 0;
    for (const g of this.inboundGroups.values()) inbound += g.listeners.size;
    for (const g of this.outboundGroups.values()) outbound += g.listeners.size;
    for (const g of this.egressGroups.values()) outbound += g.listeners.size;
    return { inbound, outbound };
  }

  /** An EgressNetwork that reaches into the cluster networks: said whenever a client's traffic meets it. */
  private egressDiagnostics(answer: EgressAnswer): string {
    if (answer.kind !== 'egress') return '';
    const { namespace, name } = answer.policy.egress;
    const overlap = this.store.get('EgressNetwork', namespace, name)?.clusterOverlap ?? [];
    return overlap.length > 0
      ? `EgressNetwork ${namespace}/${name}: its networks reach into the cluster networks ${overlap.join(', ')}; traffic to them is never egress, the EgressNetwork applies to the rest`
      : '';
  }

  /** What was wrong with a watched Service's annotations (bad values replaced by defaults). */
  private outboundDiagnostics(namespace: string, name: string): string {
    const problems = this.store.get('Service', namespace, name)?.problems ?? [];
    return problems.length > 0 ? `Service ${namespace}/${name}: ${problems.join('; ')}` : '';
  }

  private groupState<T>(value: T, diagnostics: string): { json: string; value: T; diagnostics: string } {
    if (diagnostics) this.opts.onDiagnostic?.(diagnostics);
    const json = JSON.stringify(value);
    return { json, value: this.intern(json, value), diagnostics };
  }

  /** The one object of an answer (taken by one more group). */
  private intern<T>(json: string, value: T): T {
    const held = this.answers.get(json);
    if (held) {
      held.holders++;
      return held.value as T;
    }
    this.answers.set(json, { value, holders: 1 });
    return value;
  }

  /** A group lets go of its answer. */
  private release(json: string): void {
    const held = this.answers.get(json);
    if (held && --held.holders === 0) this.answers.delete(json);
  }

  /**
   * Recomputes the answers a change may affect. A deleted workload or Service ends its streams.
   * Servers, AuthorizationPolicies and HTTPRoutes take effect in their own namespace only (a Server
   * selects pods of its namespace, a policy targets a Server, a route or the namespace it is in, a
   * route attaches to a Server or Service of its namespace or, as a consumer route, serves clients of
   * it): a change to one recomputes the watches of that namespace, not of the whole cluster (at 5,000
   * watched pods, every Server change recomputed 5,000 answers; docs/scale.md). Authentications may be
   * referenced from any namespace: a change to one recomputes everything, as a re-list does.
   */
  private changed(kind: IndexedKind, namespace?: string, name?: string, server?: { before?: ServerSpec }): void {
    const inbound =
      kind !== 'Service' &&
      kind !== 'GatewayHTTPRoute' &&
      kind !== 'GRPCRoute' &&
      kind !== 'TLSRoute' &&
      kind !== 'TCPRoute' &&
      kind !== 'EgressNetwork';
    const outbound = kind === 'Service' || isRouteKind(kind);
    const scoped =
      namespace !== undefined &&
      (kind === 'Server' || kind === 'AuthorizationPolicy' || kind === 'HTTPLocalRateLimitPolicy' || isRouteKind(kind));
    const workload = kind === 'Pod' || kind === 'ExternalWorkload';
    if (inbound) {
      // A workload's event reaches its own watches only; a scoped change, its namespace's.
      const ids =
        workload && namespace !== undefined
          ? this.inboundByWorkload.get(workloadId(kind === 'Pod' ? 'pod' : 'externalworkload', namespace, name ?? ''))
          : scoped
            ? this.inboundByNamespace.get(namespace)
            : this.inboundGroups.keys();
      // A Server takes part in the answers of the workloads it selects (before or after the change) and
      // no other's: the others of its namespace keep theirs (a Server change recomputed 200 pods to
      // answer 10 of them at the scale bench's size).
      const after = server && namespace !== undefined ? this.store.get('Server', namespace, name ?? '') : undefined;
      for (const id of [...(ids ?? [])]) {
        const g = this.inboundGroups.get(id);
        if (!g) continue; // ended or closed by a listener meanwhile
        const k = g.key;
        if (workload && (kind === 'Pod') !== (k.kind === 'pod')) continue;
        if (server) {
          const w = this.workload(k.kind, k.namespace, k.name);
          const selected = (s: ServerSpec | undefined) => s !== undefined && w !== undefined && serverSelects(s, w);
          if (w && !selected(server.before) && !selected(after)) continue;
        }
        const result = this.inbound(k.kind, k.namespace, k.name, k.port);
        if (!result) {
          this.dropInbound(id, k);
          this.end(g, `${k.kind} ${k.namespace}/${k.name} was deleted`);
          continue;
        }
        this.publish(g, result.server, diagnosticsOf(result));
      }
    }
    if (outbound) {
      const ids = scoped ? this.outboundByNamespace.get(namespace) : this.outboundGroups.keys();
      for (const id of [...(ids ?? [])]) {
        const g = this.outboundGroups.get(id);
        if (!g) continue;
        const k = g.key;
        const policy = this.outbound(k.namespace, k.name, k.port, k.sourceNamespace);
        if (!policy) {
          this.dropOutbound(id, k);
          this.end(g, `Service ${k.namespace}/${k.name} was deleted`);
          continue;
        }
        this.publish(g, policy, this.outboundDiagnostics(k.namespace, k.name));
      }
    }
    // Egress answers depend on every EgressNetwork a client may meet (its namespace's, the global ones),
    // the routes attached to them and the Services their rules send to: recomputed on any such change.
    if (kind === 'EgressNetwork' || kind === 'Service' || isRouteKind(kind))
      for (const g of this.egressGroups.values()) {
        const k = g.key;
        const answer = this.egress(k.ip, k.port, k.sourceNamespace);
        this.publish(g, answer, this.egressDiagnostics(answer));
      }
    this.opts.onChange?.(kind);
  }

  private publish<T>(g: Group<T>, value: T, diagnostics: string): void {
    if (diagnostics !== g.diagnostics) {
      g.diagnostics = diagnostics;
      if (diagnostics) this.opts.onDiagnostic?.(diagnostics);
    }
    const json = JSON.stringify(value);
    if (json === g.json) return;
    this.release(g.json);
    g.json = json;
    g.value = this.intern(json, value);
    value = g.value;
    for (const l of [...g.listeners]) {
      try {
        l.update(value);
      } catch (err) {
        this.opts.onListenerError?.(err);
      }
    }
  }

  private dropInbound(id: string, k: InboundKey): void {
    const g = this.inboundGroups.get(id);
    if (g) this.release(g.json);
    this.inboundGroups.delete(id);
    removeFrom(this.inboundByWorkload, workloadId(k.kind, k.namespace, k.name), id);
    removeFrom(this.inboundByNamespace, k.namespace, id);
  }

  private dropOutbound(id: string, k: OutboundKey): void {
    const g = this.outboundGroups.get(id);
    if (g) this.release(g.json);
    this.outboundGroups.delete(id);
    removeFrom(this.outboundByNamespace, k.namespace, id);
    removeFrom(this.outboundByNamespace, k.sourceNamespace, id);
  }

  /** Tells a dropped group's listeners that their target is gone. */
  private end<T>(g: Group<T>, reason: string): void {
    for (const l of [...g.listeners]) {
      try {
        l.end(reason);
      } catch (err) {
        this.opts.onListenerError?.(err);
      }
    }
    g.listeners.clear();
  }
}

function diagnosticsOf(r: InboundResult): string {
  const lines: string[] = [];
  if (r.conflicting.length > 0 && r.server.ref.kind === 'server')
    lines.push(
      `Server ${r.server.ref.name} wins the port over ${r.conflicting.join(', ')} (oldest first, then by name); the others are ignored for it`,
    );
  for (const i of r.ignored) lines.push(`${i.kind} ${i.namespace}/${i.name} is ignored: ${i.reason}`);
  return lines.join('; ');
}

function workloadId(kind: WorkloadKind, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}

function addTo(index: Map<string, Set<string>>, key: string, id: string): void {
  let ids = index.get(key);
  if (!ids) index.set(key, (ids = new Set()));
  ids.add(id);
}

function removeFrom(index: Map<string, Set<string>>, key: string, id: string): void {
  const ids = index.get(key);
  if (!ids?.delete(id)) return;
  if (ids.size === 0) index.delete(key);
}
