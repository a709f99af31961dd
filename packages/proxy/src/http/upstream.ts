// Where a request goes once an endpoint is picked: the connector's answer (transport/connector.ts), and
// the connect stages' target, Connected: the upstream and how the request is counted.
import type { UpstreamSession } from './h2-engine.js';
import type { Socket } from 'node:net';
import type { Labels } from '../metrics/metrics.js';
import type { Endpoint } from '../targets.js';
import type { H1Endpoint } from './h1-pool.js';
import type { H2Pool } from './h2-pool.js';

/** Where an HTTP exchange goes: a multiplexed HTTP/2 session, or an HTTP/1 keep-alive pool (h1-pool.ts). */
export type HttpUpstream =
  | {
      readonly kind: 'h2';
      readonly endpoint: Endpoint;
      /** The identity the peer must prove over mTLS; undefined for plaintext. */
      readonly identity: string | undefined;
      readonly session: UpstreamSession;
      readonly pool: H2Pool;
    }
  | { readonly kind: 'h1'; readonly endpoint: Endpoint; readonly agent: H1Endpoint };

/** Where an HTTP/1 Upgrade (WebSocket) goes: a raw connection of its own (mTLS when meshed). */
export interface StreamUpstream {
  readonly kind: 'stream';
  readonly endpoint: Endpoint;
  readonly identity: string | undefined;
  readonly socket: Socket;
}

/** After a connect stage: where a request goes and how it is counted. */
export interface Connected {
  readonly upstream: HttpUpstream | StreamUpstream;
  /** The request's metric labels (its endpoint, TLS and authority), also what tap reports. */
  readonly labels: Labels;
  /** The :authority for an HTTP/1 request without Host that goes over HTTP/2 ('' inbound). */
  readonly authority: string;
  /** Headers added on the way (inbound: l5d-client-id). */
  readonly extra: Record<string, string> | undefined;
}
