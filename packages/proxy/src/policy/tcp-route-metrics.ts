// Linkerd's outbound transport-route metrics, with its names and labels (linkerd2-proxy
// linkerd/app/outbound/src/metrics/transport.rs, opaq/logical/route.rs and tls/logical/route.rs,
// commit 29637b64f6ce, read on 2026-11-28):
//   outbound_tcp_route_open_total    opaque connections opened on a route   parent_*, route_*, target_ip, target_port
//   outbound_tcp_route_close_total   opaque connections closed              + error
//   outbound_tls_route_open_total    TLS connections opened on a route      parent_*, route_*, hostname
//   outbound_tls_route_close_total   TLS connections closed                 + error
// error is "" (closed without one), "forbidden" (a Forbidden filter) or "invalid_backend" (an Invalid
// filter, or no backend); hostname is the connection's SNI. A connection is counted once its route is
// chosen: one that no route matches (or that sends no SNI) is refused before, and counted in neither.
// Where minimesh differs: a routed connection whose upstream then fails to connect closes with
// error="" (linkerd2-proxy counts the inner service's failure as error="unexpected").
// minimesh-proxy counts them for the connections its egress stage routes (an address outside the
// cluster networks whose outbound policy has an opaque route, or TLS routes): a Deny EgressNetwork's
// connection opens and closes with error="forbidden" at once.
import type { CompiledOpaqueRoute, CompiledOutboundPolicy } from '@minimesh/policy/client';
import type { Registry } from 'prom-client';
import { SeriesCounter, type CounterHandle } from '../metrics/series.js';
import { parentLabels, routeLabels } from './route-metrics.js';

export type TcpRouteError = '' | 'forbidden' | 'invalid_backend';

/** One connection's record: its close is counted once. */
export interface TcpRouteStats {
  close(error: TcpRouteError): void;
}

/** The open and close counters of one protocol's routes (outbound_<proto>_route_*). */
class TransportRouteMetrics {
  private readonly open: SeriesCounter;
  private readonly closed: SeriesCounter;
  private readonly handles = new Map<
    string,
    { open: CounterHandle; close: Map<string, CounterHandle>; labels: Record<string, string> }
  >();

  constructor(proto: 'tcp' | 'tls', registry: Registry) {
    this.open = new SeriesCounter(`outbound_${proto}_route_open_total`, 'The number of connections opened', registry);
    this.closed = new SeriesCounter(
      `outbound_${proto}_route_close_total`,
      'The number of connections closed',
      registry,
    );
  }

  /** Counts a connection opened on `route` of `policy`, with the protocol's own labels after parent_* and route_*. */
  start(policy: CompiledOutboundPolicy, route: CompiledOpaqueRoute, own: Record<string, string>): TcpRouteStats {
    const key = `${policy.meta.group}|${policy.meta.kind}|${policy.ref.namespace}|${policy.meta.name}|${policy.ref.port}|${route.meta.group}|${route.meta.kind}|${route.ref?.namespace ?? ''}|${route.meta.name}|${Object.values(own).join('|')}`;
    let h = this.handles.get(key);
    if (h === undefined) {
      if (this.handles.size >= 10_000) this.handles.clear();
      const labels = { ...parentLabels(policy), ...routeLabels(route), ...own };
      this.handles.set(key, (h = { open: this.open.with(labels), close: new Map(), labels }));
    }
    const handles = h;
    handles.open.value++;
    let done = false;
    return {
      close: (error) => {
        if (done) return;
        done = true;
        let c = handles.close.get(error);
        if (c === undefined) handles.close.set(error, (c = this.closed.with({ ...handles.labels, error })));
        c.value++;
      },
    };
  }
}

/** outbound_tcp_route_*: opaque connections, by target address. */
export class TcpRouteMetrics {
  private readonly m: TransportRouteMetrics;
  constructor(registry: Registry) {
    this.m = new TransportRouteMetrics('tcp', registry);
  }

  /** Counts a connection opened on `route` of `policy` to ip:port. */
  start(policy: CompiledOutboundPolicy, route: CompiledOpaqueRoute, ip: string, port: number): TcpRouteStats {
    return this.m.start(policy, route, { target_ip: ip, target_port: String(port) });
  }
}

/** outbound_tls_route_*: TLS connections routed by their SNI, by hostname (the SNI). */
export class TlsRouteMetrics {
  private readonly m: TransportRouteMetrics;
  constructor(registry: Registry) {
    this.m = new TransportRouteMetrics('tls', registry);
  }

  /** Counts a connection opened on `route` of `policy` whose ClientHello named `hostname`. */
  start(policy: CompiledOutboundPolicy, route: CompiledOpaqueRoute, hostname: string): TcpRouteStats {
    return this.m.start(policy, route, { hostname: hostname.toLowerCase() });
  }
}
