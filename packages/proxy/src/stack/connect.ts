// Connect: Endpoint → an upstream to send on, for both directions. Meshed endpoints (an identity, and a
// certificate of ours to present) get ONE multiplexed HTTP/2 session over mTLS that HTTP/1 rides too,
// upgraded; unmeshed endpoints (and the app behind the inbound proxy) get an HTTP/1 keep-alive pool or
// a plaintext HTTP/2 session. TCP gets a fresh connection (mTLS when meshed).
import { Agent, type AgentOptions } from 'node:http';
import { connect as netConnect, type Socket } from 'node:net';
import type { ClientHttp2Session } from 'node:http2';
import { H2Pool } from '../http/h2-pool.js';
import { armConnectTimeout, connectMtls } from '../tls/connect.js';
import type { TlsCredentials } from '../tls/credentials.js';
import type { Endpoint } from '../targets.js';

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

export class Connector {
  readonly meshed = new H2Pool();
  readonly plainH2 = new H2Pool();
  readonly agent = new Agent({
    keepAlive: true,
    maxSockets: Infinity,
    maxFreeSockets: 1024,
    scheduling: 'lifo',
    noDelay: true,
  } as AgentOptions);

  constructor(
    private readonly creds: TlsCredentials,
    private readonly timeoutMs: number,
  ) {}

  /** The identity to require of `ep`, when we can originate mTLS to it (it is meshed and we have a certificate). */
  meshIdentity(ep: Endpoint): string | undefined {
    return ep.identity !== undefined && this.creds.context !== undefined ? ep.identity : undefined;
  }

  /** The upstream for an exchange that arrived as `protocol`. */
  http(ep: Endpoint, protocol: 'http1' | 'h2'): HttpUpstream {
    const identity = this.meshIdentity(ep);
    if (identity !== undefined) {
      const session = this.meshed.get(`${ep.key}#${identity}`, () =>
        connectMtls(this.creds, ep.ip, ep.port, identity, ['h2'], this.timeoutMs),
      );
      return { kind: 'h2', endpoint: ep, identity, session, pool: this.meshed };
    }
    if (protocol === 'http1') return { kind: 'h1', endpoint: ep, agent: this.agent };
    const session = this.plainH2.get(ep.key, () => this.tcp(ep));
    return { kind: 'h2', endpoint: ep, identity: undefined, session, pool: this.plainH2 };
  }

  /** A raw connection for TCP or an upgraded (WebSocket) exchange; mTLS without ALPN when meshed. */
  stream(ep: Endpoint): Socket {
    const identity = this.meshIdentity(ep);
    return identity !== undefined
      ? connectMtls(this.creds, ep.ip, ep.port, identity, [], this.timeoutMs)
      : this.tcp(ep);
  }

  private tcp(ep: Endpoint): Socket {
    const s = netConnect({ host: ep.ip, port: ep.port, noDelay: true });
    armConnectTimeout(s, this.timeoutMs, ep.key);
    return s;
  }

  close(): void {
    this.meshed.close();
    this.plainH2.close();
    this.agent.destroy();
  }
}
