// The targets passed from one stage of the proxy to the next, as linkerd2-proxy names them. Each stage
// turns one target into the next (one file, one builder, see layers.ts), so the path of a connection
// reads the same in the folder tree, the chains (outbound/index.ts, inbound/index.ts) and these types.
// Targets are values: made once, never written afterwards (the per-request state is the exchange's).
//
//   outbound: Accept → Detected<Accept> → (per request) Logical → RouteTarget → Concrete → Balanced
//             → Connected (http/upstream.ts) → forwarded
//             (opaque: Opaque<Accept> → Concrete → Balanced → relayed;
//              TLS by SNI: Opaque<Accept> → TlsConn<Accept> → Sni<Accept> → Opaque<Accept> with its
//              route's backend → Concrete → Balanced → relayed)
//   inbound:  Accept → InboundAccept → InboundConn (TLS) → Detected<InboundConn> → (per request)
//             Authorized → Connected → forwarded          (opaque: Opaque<InboundConn> → relayed)
import type { Socket } from 'node:net';
import { addressKey } from '@minimesh/config';
import type {
  CompiledOutboundPolicy,
  CompiledOutboundRule,
  CompiledTransportBackend,
  InboundRouteFilter,
} from '@minimesh/policy/client';
import type { PeakEwma } from './balance/p2c-peak-ewma.js';

export type Direction = 'inbound' | 'outbound';
/** "true" = mTLS; "no_identity" = plaintext; "opaque" = TLS passed through untouched. */
export type TlsLabel = 'true' | 'no_identity' | 'opaque';

/** A socket address; `key` is its "ip:port" text ("[ip]:port" for IPv6), the map key used everywhere. */
export interface Addr {
  readonly ip: string;
  readonly port: number;
  readonly key: string;
}

/** "ip:port" ("[ip]:port" for IPv6): @minimesh/config's addressKey, the one copy. */
export const keyOf = addressKey;

export function toAddr(ip: string, port: number): Addr {
  return { ip, port, key: keyOf(ip, port) };
}

/** A connection a listener accepted, and where the app was connecting (SO_ORIGINAL_DST). */
export interface Accept {
  readonly direction: Direction;
  readonly socket: Socket;
  /** Undefined when the connection reached the proxy directly (not redirected). */
  readonly orig: Addr | undefined;
}

/** A connection on its way to detection: its target, and the bytes an earlier stage already read. */
export interface Prefixed<T> {
  readonly parent: T;
  readonly socket: Socket;
  readonly prefix: Buffer;
}

/** What protocol detection made of a connection: HTTP (served by node:http / node:http2) or opaque bytes. */
export type Detected<T> = Http<T> | Opaque<T>;

export interface Http<T> {
  readonly kind: 'http';
  readonly protocol: 'http1' | 'h2';
  readonly parent: T;
  readonly socket: Socket;
  /** Bytes detection read; given back to the HTTP server. */
  readonly prefix: Buffer;
}

export interface Opaque<T> {
  readonly kind: 'opaque';
  readonly parent: T;
  readonly socket: Socket;
  /** Bytes detection read; written upstream first. */
  readonly prefix: Buffer;
  /**
   * Outbound: the backend an opaque or TLS route picked (a Forward address, a Balancer's Service);
   * absent: what discovery finds for the original destination.
   */
  readonly backend?: CompiledTransportBackend | undefined;
}

/** Outbound: a connection whose outbound policy routes TLS by its server name (the tls protocol). */
export interface TlsConn<T> {
  readonly parent: T;
  readonly socket: Socket;
  /** Bytes already read (detection's): the start of the ClientHello. */
  readonly prefix: Buffer;
  readonly policy: CompiledOutboundPolicy;
}

/** Outbound: a TLS connection and the server name its ClientHello asks for; `prefix` holds the whole ClientHello. */
export interface Sni<T> extends TlsConn<T> {
  readonly sni: string;
}

/** Inbound, admitted: redirected here (it has an original destination) and not looping into the proxy. */
export interface InboundAccept {
  readonly socket: Socket;
  /** The original destination: the pod IP and the app's port. */
  readonly orig: Addr;
  /** The client's address (what authorization checks networks against). */
  readonly clientIp: string;
}

/** Inbound, after the TLS stage: the connection and what its TLS says about the client. */
export interface InboundConn {
  /** The original destination: the pod IP and the app's port. */
  readonly orig: Addr;
  /** The client's address (what authorization checks networks against). */
  readonly clientIp: string;
  readonly tls: TlsLabel;
  /** The client's mesh identity (mTLS terminated here and its chain verified). */
  readonly clientId: string | undefined;
  /** SNI of TLS passed through (or ours, when terminating was not possible). */
  readonly sni: string | undefined;
}

/** Inbound, per request: a connection's request the port's policy admits, with its route's filters. */
export interface Authorized {
  readonly conn: InboundConn;
  /** The matched route rule's filters (header edits, redirects, injected failures); none without a policy. */
  readonly filters: readonly InboundRouteFilter[];
}

/** Where outbound policy (routes) is looked up: the Service's authority, or the original destination. */
export type OutboundTarget =
  | { readonly kind: 'authority'; readonly authority: string }
  | { readonly kind: 'addr'; readonly ip: string; readonly port: number };

/** Outbound, per request or TCP connection: what discovery made of what the app asked for. */
export interface Logical {
  /** "host:port" as the metrics and the mesh name it (Host / :authority normalized, or the original destination). */
  readonly authority: string;
  /** Where its outbound policy is looked up; undefined: nowhere (no cluster name, no original destination). */
  readonly policy: OutboundTarget | undefined;
  /** What serves it: its Service's endpoints, one endpoint, or the original destination. */
  readonly concrete: Concrete;
}

/** Outbound, per request: the request's route in the Logical's policy. */
export interface RouteTarget {
  readonly logical: Logical;
  /** The HTTPRoute rule it matched (timeouts, retries, backends); undefined: no policy or no route. */
  readonly rule: CompiledOutboundRule | undefined;
}

/** Outbound: a backend to balance over. */
export type Concrete =
  | { readonly kind: 'balanced'; readonly authority: string; readonly set: { readonly list: readonly Endpoint[] } }
  | { readonly kind: 'endpoint'; readonly authority: string; readonly endpoint: Endpoint }
  /** Not in the mesh's discovery: the original address, in plaintext. */
  | { readonly kind: 'forward'; readonly authority: string; readonly endpoint: Endpoint };

/** Outbound: the endpoint the balancer picked for a Concrete target. */
export interface Balanced {
  readonly concrete: Concrete;
  readonly endpoint: Endpoint;
}

/** One peer to send to. It always carries its address; it is meshed when it has an identity. */
export interface Endpoint extends Addr {
  /** The TLS identity the endpoint's proxy presents; undefined for unmeshed endpoints. */
  readonly identity: string | undefined;
  /** Destination's protocol hint. */
  readonly hint: 'h2' | 'opaque' | undefined;
  /** Destination's metric labels (set-level overlaid with the endpoint's own). */
  readonly labels: Record<string, string>;
  readonly weight: number;
  /** The balancer's load estimate (and health); undefined for endpoints that are not balanced (the original address, the app). */
  readonly load: PeakEwma | undefined;
  /** True when destination named this endpoint (false: the original destination or the local app). */
  readonly discovered: boolean;
}

/** An endpoint nobody discovered: the original destination, or the app behind the inbound proxy. */
export function plainEndpoint(ip: string, port: number): Endpoint {
  return {
    ip,
    port,
    key: keyOf(ip, port),
    identity: undefined,
    hint: undefined,
    labels: {},
    weight: 1,
    load: undefined,
    discovered: false,
  };
}
