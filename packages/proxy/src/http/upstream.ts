// Where an HTTP exchange goes once an endpoint is picked: the connector's answer (transport/connector.ts),
// what the forwarder (forward.ts) sends on.
import type { Agent } from 'node:http';
import type { ClientHttp2Session } from 'node:http2';
import type { Endpoint } from '../targets.js';
import type { H2Pool } from './h2-pool.js';

/** Where an HTTP exchange goes: a multiplexed HTTP/2 session, or an HTTP/1 keep-alive pool. */
export type HttpUpstream =
  | {
      readonly kind: 'h2';
      readonly endpoint: Endpoint;
      /** The identity the peer must prove over mTLS; undefined for plaintext. */
      readonly identity: string | undefined;
      readonly session: ClientHttp2Session;
      readonly pool: H2Pool;
    }
  | { readonly kind: 'h1'; readonly endpoint: Endpoint; readonly agent: Agent };
