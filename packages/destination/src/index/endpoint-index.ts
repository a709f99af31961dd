// The destination index: pure, synchronous state built from Services, EndpointSlices, Pods and
// ExternalWorkloads, with apply/delete/reset per kind and fan-out to listeners per
// (service, port, hostname). No I/O and no timers: informers feed it, the server subscribes to it.
import { isIP } from 'node:net';
import { addressKey } from '@minimesh/config';
import {
  objectKey,
  type ExternalWorkloadRecord,
  type PodRecord,
  type ServicePortRecord,
  type ServiceRecord,
  type SliceEndpointRecord,
  type SliceRecord,
} from '../k8s/records.js';

/** What a Get stream asks for: one port of one Service, optionally one instance by hostname. */
export interface ServiceTarget {
  namespace: string;
  service: string;
  port: number;
  hostname?: string;
}

export interface Address {
  ip: string;
  port: number;
}

/** One endpoint of a target, with what is known about the workload behind it. */
export interface ResolvedEndpoint extends Address {
  hostname?: string;
  zone?: string;
  nodeName?: string;
  pod?: PodRecord;
  workload?: ExternalWorkloadRecord;
}

/**
 * Receives a target's changes. Called synchronously from apply/delete/reset, so implementations must
 * not block: they queue and return.
 */
export interface EndpointListener {
  /** New or changed endpoints. */
  add(service: ServiceRecord, endpoints: ResolvedEndpoint[]): void;
  /** Endpoints that are gone. */
  remove(addresses: Address[]): void;
  /** Sent only as the first message, when the target has no endpoints; exists says whether the Service exists. */
  noEndpoints(exists: boolean): void;
}

export type ResourceKind = 'service' | 'endpointslice' | 'pod' | 'externalworkload';

interface Snapshot {
  endpoint: ResolvedEndpoint;
  /** The Service's opaque ports when the endpoint was last compared (part of what an add carries). */
  opaque: unknown;
  /** What the translation depends on, as text; computed only when references differ. */
  fingerprint?: string;
  /** The refresh that last saw this endpoint (an entry not seen by the current one is gone). */
  gen: number;
}

interface Publisher {
  key: string;
  serviceKey: string;
  target: ServiceTarget;
  listeners: Set<EndpointListener>;
  snapshot: Map<string, Snapshot>;
}

const keyOfAddress = (a: Address): string => addressKey(a.ip, a.port);

function targetKey(t: ServiceTarget): string {
  return `${t.namespace}/${t.service}:${t.port}${t.hostname ? `#${t.hostname}` : ''}`;
}

function refKey(kind: string, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}

export interface EndpointIndexOptions {
  /** A listener threw: the others still get the change. Default: ignore. */
  onListenerError?: (err: unknown) => void;
}

export class EndpointIndex {
  constructor(private readonly options: EndpointIndexOptions = {}) {}

  /** Counts refreshes; see Snapshot.gen. */
  private generation = 0;
  private readonly services = new Map<string, ServiceRecord>();
  private readonly servicesByClusterIp = new Map<string, string>();
  private readonly slices = new Map<string, SliceRecord>();
  private readonly slicesByService = new Map<string, Set<string>>();
  private readonly pods = new Map<string, PodRecord>();
  private readonly podsByIp = new Map<string, Set<string>>();
  private readonly workloads = new Map<string, ExternalWorkloadRecord>();
  private readonly workloadsByIp = new Map<string, Set<string>>();
  /** "Pod/ns/name" or "ExternalWorkload/ns/name" → keys of the slices that point at it. */
  private readonly sliceRefs = new Map<string, Set<string>>();
  private readonly publishers = new Map<string, Publisher>();
  private readonly publishersByService = new Map<string, Set<Publisher>>();
  private readonly changeListeners = new Set<(kind: ResourceKind) => void>();

  // ---- apply / delete / reset ----

  apply(kind: ResourceKind, record: ServiceRecord | SliceRecord | PodRecord | ExternalWorkloadRecord): void {
    // Most watch events change fields the records do not keep (pod status, resourceVersion): nothing to do.
    const old = this.mapOf(kind).get(objectKey(record.namespace, record.name));
    if (old !== undefined && JSON.stringify(old) === JSON.stringify(record)) return;
    const dirty = new Set<string>();
    this.put(kind, record, dirty);
    this.publish(dirty, kind);
  }

  delete(kind: ResourceKind, key: string): void {
    const dirty = new Set<string>();
    this.remove(kind, key, dirty);
    this.publish(dirty, kind);
  }

  /** Replaces everything of one kind with a fresh list: whatever the list does not hold is gone. */
  reset(
    kind: ResourceKind,
    records: ReadonlyArray<ServiceRecord | SliceRecord | PodRecord | ExternalWorkloadRecord>,
  ): void {
    const dirty = new Set<string>();
    const fresh = new Set(records.map((r) => objectKey(r.namespace, r.name)));
    for (const key of [...this.mapOf(kind).keys()]) if (!fresh.has(key)) this.remove(kind, key, dirty);
    for (const r of records) this.put(kind, r, dirty);
    this.publish(dirty, kind);
  }

  // ---- reads ----

  getService(namespace: string, name: string): ServiceRecord | undefined {
    return this.services.get(objectKey(namespace, name));
  }

  serviceByClusterIp(ip: string): ServiceRecord | undefined {
    const key = this.servicesByClusterIp.get(ip);
    return key === undefined ? undefined : this.services.get(key);
  }

  /** Running, non-hostNetwork pods with this IP (normally one). */
  podByIp(ip: string): PodRecord | undefined {
    for (const key of this.podsByIp.get(ip) ?? []) {
      const pod = this.pods.get(key);
      if (pod && !pod.terminating && !pod.hostNetwork) return pod;
    }
    return undefined;
  }

  workloadByIp(ip: string): ExternalWorkloadRecord | undefined {
    const key = [...(this.workloadsByIp.get(ip) ?? [])][0];
    return key === undefined ? undefined : this.workloads.get(key);
  }

  listServices(): ServiceRecord[] {
    return [...this.services.values()];
  }

  listSlices(): SliceRecord[] {
    return [...this.slices.values()];
  }

  listExternalWorkloads(): ExternalWorkloadRecord[] {
    return [...this.workloads.values()];
  }

  counts(): Record<ResourceKind, number> {
    return {
      service: this.services.size,
      endpointslice: this.slices.size,
      pod: this.pods.size,
      externalworkload: this.workloads.size,
    };
  }

  /** The endpoints a target resolves to right now. */
  resolve(target: ServiceTarget): { service?: ServiceRecord; endpoints: ResolvedEndpoint[] } {
    const serviceKey = objectKey(target.namespace, target.service);
    const service = this.services.get(serviceKey);
    if (!service) return { endpoints: [] };
    const svcPort = service.ports.find((p) => p.port === target.port);
    const byAddress = new Map<string, ResolvedEndpoint>();
    for (const sliceKey of this.slicesByService.get(serviceKey) ?? []) {
      const slice = this.slices.get(sliceKey);
      if (!slice) continue;
      const port = resolveTargetPort(svcPort, slice, target.port);
      if (port === undefined) continue;
      for (const ep of slice.endpoints) {
        const resolved = this.resolveEndpoint(ep, port, target.hostname);
        if (resolved) byAddress.set(keyOfAddress(resolved), resolved);
      }
    }
    return { service, endpoints: [...byAddress.values()] };
  }

  // ---- subscriptions ----

  /**
   * Subscribes a listener to a target. The current state is delivered at once (add of every endpoint,
   * or noEndpoints(exists) when there is none); changes follow as diffs. Returns the unsubscribe function.
   */
  subscribe(target: ServiceTarget, listener: EndpointListener): () => void {
    const key = targetKey(target);
    let pub = this.publishers.get(key);
    if (!pub) {
      const serviceKey = objectKey(target.namespace, target.service);
      pub = { key, serviceKey, target: { ...target }, listeners: new Set(), snapshot: new Map() };
      this.refresh(pub);
      this.publishers.set(key, pub);
      let group = this.publishersByService.get(serviceKey);
      if (!group) this.publishersByService.set(serviceKey, (group = new Set()));
      group.add(pub);
    }
    pub.listeners.add(listener);
    const service = this.services.get(pub.serviceKey);
    if (pub.snapshot.size > 0 && service)
      listener.add(
        service,
        [...pub.snapshot.values()].map((s) => s.endpoint),
      );
    else listener.noEndpoints(service !== undefined);
    const owned = pub;
    return () => {
      owned.listeners.delete(listener);
      if (owned.listeners.size > 0) return;
      this.publishers.delete(owned.key);
      const group = this.publishersByService.get(owned.serviceKey);
      group?.delete(owned);
      if (group?.size === 0) this.publishersByService.delete(owned.serviceKey);
    };
  }

  /** Called after every change (for GetProfile streams, which recompute and send only what differs). */
  onChange(fn: (kind: ResourceKind) => void): () => void {
    this.changeListeners.add(fn);
    return () => this.changeListeners.delete(fn);
  }

  listenerCount(): number {
    let n = 0;
    for (const p of this.publishers.values()) n += p.listeners.size;
    return n;
  }

  // ---- internals ----

  private mapOf(kind: ResourceKind): Map<string, unknown> {
    switch (kind) {
      case 'service':
        return this.services;
      case 'endpointslice':
        return this.slices;
      case 'pod':
        return this.pods;
      case 'externalworkload':
        return this.workloads;
    }
  }

  private put(
    kind: ResourceKind,
    record: ServiceRecord | SliceRecord | PodRecord | ExternalWorkloadRecord,
    dirty: Set<string>,
  ): void {
    const key = objectKey(record.namespace, record.name);
    switch (kind) {
      case 'service': {
        const svc = record as ServiceRecord;
        const old = this.services.get(key);
        if (old)
          for (const ip of old.clusterIPs)
            if (this.servicesByClusterIp.get(ip) === key) this.servicesByClusterIp.delete(ip);
        this.services.set(key, svc);
        for (const ip of svc.clusterIPs) this.servicesByClusterIp.set(ip, key);
        dirty.add(key);
        return;
      }
      case 'endpointslice': {
        const slice = record as SliceRecord;
        this.remove('endpointslice', key, dirty);
        this.slices.set(key, slice);
        if (slice.serviceName !== '') {
          const serviceKey = objectKey(slice.namespace, slice.serviceName);
          let set = this.slicesByService.get(serviceKey);
          if (!set) this.slicesByService.set(serviceKey, (set = new Set()));
          set.add(key);
          dirty.add(serviceKey);
        }
        for (const ep of slice.endpoints) {
          if (!ep.targetRef) continue;
          const ref = refKey(ep.targetRef.kind, ep.targetRef.namespace, ep.targetRef.name);
          let set = this.sliceRefs.get(ref);
          if (!set) this.sliceRefs.set(ref, (set = new Set()));
          set.add(key);
        }
        return;
      }
      case 'pod': {
        const pod = record as PodRecord;
        this.unindexIps(this.podsByIp, key, this.pods.get(key)?.ips ?? []);
        this.pods.set(key, pod);
        this.indexIps(this.podsByIp, key, pod.ips);
        this.markReferrers(refKey('Pod', pod.namespace, pod.name), dirty);
        return;
      }
      case 'externalworkload': {
        const ew = record as ExternalWorkloadRecord;
        this.unindexIps(this.workloadsByIp, key, this.workloads.get(key)?.ips ?? []);
        this.workloads.set(key, ew);
        this.indexIps(this.workloadsByIp, key, ew.ips);
        this.markReferrers(refKey('ExternalWorkload', ew.namespace, ew.name), dirty);
        return;
      }
    }
  }

  private remove(kind: ResourceKind, key: string, dirty: Set<string>): void {
    switch (kind) {
      case 'service': {
        const old = this.services.get(key);
        if (!old) return;
        for (const ip of old.clusterIPs)
          if (this.servicesByClusterIp.get(ip) === key) this.servicesByClusterIp.delete(ip);
        this.services.delete(key);
        dirty.add(key);
        return;
      }
      case 'endpointslice': {
        const old = this.slices.get(key);
        if (!old) return;
        this.slices.delete(key);
        if (old.serviceName !== '') {
          const serviceKey = objectKey(old.namespace, old.serviceName);
          const set = this.slicesByService.get(serviceKey);
          set?.delete(key);
          if (set?.size === 0) this.slicesByService.delete(serviceKey);
          dirty.add(serviceKey);
        }
        for (const ep of old.endpoints) {
          if (!ep.targetRef) continue;
          const ref = refKey(ep.targetRef.kind, ep.targetRef.namespace, ep.targetRef.name);
          const set = this.sliceRefs.get(ref);
          set?.delete(key);
          if (set?.size === 0) this.sliceRefs.delete(ref);
        }
        return;
      }
      case 'pod': {
        const old = this.pods.get(key);
        if (!old) return;
        this.unindexIps(this.podsByIp, key, old.ips);
        this.pods.delete(key);
        this.markReferrers(refKey('Pod', old.namespace, old.name), dirty);
        return;
      }
      case 'externalworkload': {
        const old = this.workloads.get(key);
        if (!old) return;
        this.unindexIps(this.workloadsByIp, key, old.ips);
        this.workloads.delete(key);
        this.markReferrers(refKey('ExternalWorkload', old.namespace, old.name), dirty);
        return;
      }
    }
  }

  private indexIps(map: Map<string, Set<string>>, key: string, ips: readonly string[]): void {
    for (const ip of ips) {
      let set = map.get(ip);
      if (!set) map.set(ip, (set = new Set()));
      set.add(key);
    }
  }

  private unindexIps(map: Map<string, Set<string>>, key: string, ips: readonly string[]): void {
    for (const ip of ips) {
      const set = map.get(ip);
      set?.delete(key);
      if (set?.size === 0) map.delete(ip);
    }
  }

  private markReferrers(ref: string, dirty: Set<string>): void {
    for (const sliceKey of this.sliceRefs.get(ref) ?? []) {
      const slice = this.slices.get(sliceKey);
      if (slice && slice.serviceName !== '') dirty.add(objectKey(slice.namespace, slice.serviceName));
    }
  }

  private resolveEndpoint(
    ep: SliceEndpointRecord,
    port: number,
    hostname: string | undefined,
  ): ResolvedEndpoint | undefined {
    if (!ep.ready || ep.terminating) return undefined;
    if (hostname !== undefined && ep.hostname !== hostname) return undefined;
    const ip = ep.addresses[0];
    // FQDN slices (and anything else that is not an address) cannot be dialed by IP
    if (ip === undefined || isIP(ip) === 0) return undefined;
    const out: ResolvedEndpoint = { ip, port };
    if (ep.hostname !== undefined) out.hostname = ep.hostname;
    if (ep.zone !== undefined) out.zone = ep.zone;
    if (ep.nodeName !== undefined) out.nodeName = ep.nodeName;
    const ref = ep.targetRef;
    if (ref?.kind === 'Pod') {
      const pod = this.pods.get(objectKey(ref.namespace, ref.name));
      if (pod?.terminating) return undefined;
      if (pod) out.pod = pod;
    } else if (ref?.kind === 'ExternalWorkload') {
      const ew = this.workloads.get(objectKey(ref.namespace, ref.name));
      if (ew) out.workload = ew;
    }
    return out;
  }

  /** Recomputes every publisher of the dirty services and sends each its diff. */
  private publish(dirtyServices: Set<string>, kind: ResourceKind): void {
    for (const serviceKey of dirtyServices) {
      for (const pub of this.publishersByService.get(serviceKey) ?? []) this.refresh(pub, true);
    }
    for (const fn of this.changeListeners) this.call(() => fn(kind));
  }

  private refresh(pub: Publisher, notify = false): void {
    const { service, endpoints } = this.resolve(pub.target);
    const changed: ResolvedEndpoint[] = [];
    const opaque = service?.opaquePorts;
    const gen = ++this.generation;
    const snapshot = pub.snapshot;
    for (const endpoint of endpoints) {
      const key = keyOfAddress(endpoint);
      const prev = snapshot.get(key);
      // Unchanged records are the same objects (the index keeps a record until its content changes),
      // so most endpoints of a large Service compare by reference and keep their snapshot entry; only
      // the others are serialised and compared by content.
      if (prev && prev.opaque === opaque && sameReferences(prev.endpoint, endpoint)) {
        prev.endpoint = endpoint;
        prev.gen = gen;
        continue;
      }
      const fp = fingerprint(endpoint, opaque);
      if (prev === undefined || (prev.fingerprint ?? fingerprint(prev.endpoint, prev.opaque)) !== fp)
        changed.push(endpoint);
      snapshot.set(key, { endpoint, opaque, fingerprint: fp, gen });
    }
    const gone: Address[] = [];
    for (const [key, old] of snapshot) {
      if (old.gen === gen) continue;
      gone.push({ ip: old.endpoint.ip, port: old.endpoint.port });
      snapshot.delete(key);
    }
    if (!notify) return;
    // Adds before removes (as Linkerd does): a client never sees a replaced endpoint set go empty in
    // between, and every stream gets the new endpoint before any stream gets the removal.
    if (changed.length > 0 && service) for (const l of pub.listeners) this.call(() => l.add(service, changed));
    if (gone.length > 0) for (const l of pub.listeners) this.call(() => l.remove(gone));
  }

  private call(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.options.onListenerError?.(err);
    }
  }
}

/** What the translation of an endpoint depends on: a change here re-sends it (as an add). */
function fingerprint(endpoint: ResolvedEndpoint, opaque: unknown): string {
  const ew = endpoint.workload;
  return JSON.stringify([
    endpoint.hostname,
    endpoint.zone,
    endpoint.nodeName,
    endpoint.pod,
    ew && [ew.name, ew.identity, ew.serverName],
    opaque,
  ]);
}

function sameReferences(a: ResolvedEndpoint, b: ResolvedEndpoint): boolean {
  return (
    a.pod === b.pod &&
    a.workload === b.workload &&
    a.hostname === b.hostname &&
    a.zone === b.zone &&
    a.nodeName === b.nodeName
  );
}

/**
 * The port an EndpointSlice serves a Service port on. Slices name their ports after the Service's
 * ports (the endpointslice controller resolves named targetPorts per pod); hand-made slices may
 * instead carry the target port's number or name. A Service without that port: the port as asked.
 */
export function resolveTargetPort(
  svcPort: ServicePortRecord | undefined,
  slice: SliceRecord,
  requested: number,
): number | undefined {
  if (!svcPort) return requested;
  const target = svcPort.targetPort;
  if (slice.ports.length === 0) return typeof target === 'number' ? target : undefined;
  const byName = slice.ports.find((p) => p.name === svcPort.name);
  if (byName) return byName.port;
  if (typeof target === 'number') return slice.ports.some((p) => p.port === target) ? target : undefined;
  return slice.ports.find((p) => p.name === target)?.port;
}
