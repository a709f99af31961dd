// The label sets of proxied traffic, made once and reused by every request and connection they describe:
// the series behind them are found by object (series.ts), so a request costs a few increments instead of
// hashing some twenty labels. The connect stages ask for them.
import type { Addr, Endpoint, InboundConn } from '../targets.js';
import { LabelCache } from './label-cache.js';
import { toLabels, type Labels } from './metrics.js';

/** Outbound: traffic to an endpoint for an authority, and connections accepted from the app. */
export class OutboundLabels {
  private readonly cache = new LabelCache();
  /** `isLocal`: the endpoint is this pod itself (plaintext to the app: no_tls_reason="loopback"). */
  constructor(private readonly isLocal: (ep: Endpoint) => boolean = () => false) {}
  // The last label set each endpoint was used with: a request usually finds its labels here without
  // building a cache key.
  private readonly last = new WeakMap<Endpoint, { authority: string; serverId: string | undefined; labels: Labels }>();

  /** Traffic to `ep` for `authority`: mTLS and server_id when `serverId` (we originate mTLS to it). */
  endpoint(authority: string, ep: Endpoint, serverId: string | undefined): Labels {
    const last = this.last.get(ep);
    if (last !== undefined && last.authority === authority && last.serverId === serverId) return last.labels;
    const labels = this.endpointSlow(authority, ep, serverId);
    this.last.set(ep, { authority, serverId, labels });
    return labels;
  }

  private endpointSlow(authority: string, ep: Endpoint, serverId: string | undefined): Labels {
    const local = serverId === undefined && this.isLocal(ep);
    const key = `${authority}|${ep.key}|${serverId ?? ''}|${ep.discovered ? 'd' : ''}${local ? 'l' : ''}`;
    const cached = this.cache.get(key);
    if (cached) return cached;
    const l = toLabels({
      direction: 'outbound',
      authority,
      targetAddr: ep.key,
      tls: serverId !== undefined ? 'true' : 'no_identity',
      serverId,
      noTlsReason:
        serverId !== undefined
          ? undefined
          : local
            ? 'loopback'
            : ep.discovered
              ? 'not_provided_by_service_discovery'
              : 'no_endpoint',
      dst: ep.labels,
    });
    return this.cache.put(key, l);
  }

  /** A connection accepted from the app (over loopback), to its original destination. */
  accept(orig: Addr | undefined): Labels {
    const key = `accept|${orig?.key ?? ''}`;
    return (
      this.cache.get(key) ??
      this.cache.put(
        key,
        toLabels({ direction: 'outbound', targetAddr: orig?.key ?? '', tls: 'no_identity', noTlsReason: 'loopback' }),
      )
    );
  }
}

/** Inbound: a connection from a client (its TLS and identity) and the authority of its requests. */
export class InboundLabels {
  private readonly cache = new LabelCache();
  // The last label set of each connection: its requests usually carry the same authority.
  private readonly last = new WeakMap<InboundConn, { authority: string | undefined; labels: Labels }>();

  of(conn: InboundConn, authority: string | undefined): Labels {
    const last = this.last.get(conn);
    if (last !== undefined && last.authority === authority) return last.labels;
    const labels = this.slow(conn, authority);
    this.last.set(conn, { authority, labels });
    return labels;
  }

  private slow(conn: InboundConn, authority: string | undefined): Labels {
    const key = `${authority ?? ''}|${conn.orig.key}|${conn.tls}|${conn.clientId ?? ''}|${conn.sni ?? ''}`;
    return (
      this.cache.get(key) ??
      this.cache.put(
        key,
        toLabels({
          direction: 'inbound',
          authority: authority ?? '',
          targetAddr: conn.orig.key,
          tls: conn.tls,
          clientId: conn.clientId,
          sni: conn.sni,
          noTlsReason: 'no_tls_from_remote',
        }),
      )
    );
  }
}
