// The targets passed from one stage of the proxy to the next, as linkerd2-proxy names them. Each stage
// is a function from one target to the next (one file, one builder), so the path of a connection reads
// the same in the folder tree, the call chain and these types:
//
//   outbound: Accept → Detected<OutboundConn> → (per request) Logical → Concrete → Endpoint → upstream
//   inbound:  Accept → InboundConn (TLS) → Detected<InboundConn> → (per request) Endpoint (the app) → upstream
import type { Socket } from 'node:net';
import { addressKey } from '@minimesh/config';
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
}

/** Inbound, after the TLS stage: the connection and what its TLS says about the client. */
export interface InboundConn {
  /** The original destination: the pod IP and the app's port. */
  readonly orig: Addr;
  /** The client's address (what authorization checks networks against). */
  readonly clientIp: string;
  tls: TlsLabel;
  /** The client's mesh identity (mTLS terminated here and its chain verified). */
  clientId: string | undefined;
  /** SNI of TLS passed through (or ours, when terminating was not possible). */
  sni: string | undefined;
}

/** Outbound, per request or TCP connection: what the app asked for. */
export interface Logical {
  /** Host / :authority of an HTTP request (raw header value); undefined for TCP. */
  readonly host: string | undefined;
  readonly orig: Addr | undefined;
}

/** Outbound: what discovery made of a logical target. */
export type Concrete =
  | { readonly kind: 'balanced'; readonly authority: string; readonly set: { readonly list: readonly Endpoint[] } }
  | { readonly kind: 'endpoint'; readonly authority: string; readonly endpoint: Endpoint }
  /** Not in the mesh's discovery: the original address, in plaintext. */
  | { readonly kind: 'forward'; readonly authority: string; readonly endpoint: Endpoint };

/** One peer to send to. It always carries its address; it is meshed when it has an identity. */
export interface Endpoint extends Addr {
  /** The TLS identity the endpoint's proxy presents; undefined for unmeshed endpoints. */
  readonly identity: string | undefined;
  /** Destination's protocol hint. */
  readonly hint: 'h2' | 'opaque' | undefined;
  /** Destination's metric labels (set-level overlaid with the endpoint's own). */
  readonly labels: Record<string, string>;
  readonly weight: number;
  /** The balancer's load estimate; undefined for endpoints that are not balanced (the original address, the app). */
  load: PeakEwma | undefined;
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
