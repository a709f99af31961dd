// The connector: Endpoint → an upstream to send on, for both directions (the connect stages use it). Meshed endpoints (an identity, and a
// certificate of ours to present) get ONE multiplexed HTTP/2 session over mTLS that HTTP/1 rides too,
// upgraded; unmeshed endpoints (and the app behind the inbound proxy) get an HTTP/1 keep-alive pool or
// a plaintext HTTP/2 session. TCP gets a fresh connection (mTLS when meshed). An endpoint at one of this
// pod's own IPs is the pod itself: plaintext, straight to the app (the proxy's own connections skip the
// iptables redirect, so mTLS would land on the app, not on our inbound side; Linkerd does the same).
import type { Socket } from 'node:net';
import type { H2Engine, UpstreamSession } from '../http/h2-engine.js';
import { H1Pool } from '../http/h1-pool.js';
import { H2Pool } from '../http/h2-pool.js';
import type { HttpUpstream } from '../http/upstream.js';
import { armConnectTimeout, connectMtls } from '../tls/connect.js';
import type { TlsCredentials } from '../tls/credentials.js';
import type { Endpoint } from '../targets.js';
import { dialTcp } from '../tcp/liveness.js';

export class Connector {
  /** Sessions to meshed endpoints; one that breaks is reported (`onBroken`: endpoint health takes it out of balancing). */
  readonly meshed: H2Pool;
  private closed = false;
  readonly plainH2: H2Pool;
  /** HTTP/1 keep-alive connections to the app and to unmeshed endpoints, per endpoint. */
  readonly h1 = new H1Pool();

  constructor(
    private readonly creds: TlsCredentials,
    private readonly timeoutMs: number,
    /** A meshed endpoint's session broke (reset, refused, TLS failure, closed by the peer). */
    private readonly onBroken?: (ep: Endpoint) => void,
    /** This pod's own IPs, canonical text (config's inboundIps). */
    private readonly localIps: ReadonlySet<string> = new Set(),
    /** The HTTP/2 engine of its sessions. */
    engine: H2Engine = 'minimesh',
  ) {
    this.meshed = new H2Pool(
      60_000,
      (ep) => {
        if (!this.closed) this.onBroken?.(ep as Endpoint);
      },
      engine,
    );
    this.plainH2 = new H2Pool(60_000, undefined, engine);
  }

  /** True when `ep` is this pod itself (one of its own IPs). */
  isLocal(ep: Endpoint): boolean {
    return this.localIps.has(ep.ip);
  }

  /**
   * The identity to require of `ep`, when we can originate mTLS to it: it is meshed, we have a
   * certificate, and it is not this pod itself.
   */
  meshIdentity(ep: Endpoint): string | undefined {
    return ep.identity !== undefined && this.creds.context !== undefined && !this.localIps.has(ep.ip)
      ? ep.identity
      : undefined;
  }

  /** The upstream for an exchange that arrived as `protocol`. */
  http(ep: Endpoint, protocol: 'http1' | 'h2'): HttpUpstream {
    const identity = this.meshIdentity(ep);
    if (identity !== undefined) {
      const session = this.meshedSession(ep, identity);
      return { kind: 'h2', endpoint: ep, identity, session, pool: this.meshed };
    }
    if (protocol === 'http1') return { kind: 'h1', endpoint: ep, agent: this.h1.endpoint(ep.key, ep.ip, ep.port) };
    const session = this.plainH2.get(ep.key, () => this.tcp(ep));
    return { kind: 'h2', endpoint: ep, identity: undefined, session, pool: this.plainH2 };
  }

  private meshedSession(ep: Endpoint, identity: string): UpstreamSession {
    // The endpoint rides along (only balanced ones: they have a load estimate to mark not ready).
    return this.meshed.get(
      `${ep.key}#${identity}`,
      () => connectMtls(this.creds, ep.ip, ep.port, identity, ['h2'], this.timeoutMs),
      ep.load !== undefined ? ep : undefined,
    );
  }

  /**
   * The endpoint's HTTP/2 session, opened again if it broke (endpoint health's background reconnect,
   * balance/endpoint-health.ts); undefined when the connector is closed or cannot originate mTLS to it.
   */
  reconnect(ep: Endpoint): UpstreamSession | undefined {
    const identity = this.closed ? undefined : this.meshIdentity(ep);
    return identity === undefined ? undefined : this.meshedSession(ep, identity);
  }

  /** A raw connection for TCP or an upgraded (WebSocket) exchange; mTLS without ALPN when meshed. */
  stream(ep: Endpoint): Socket {
    const identity = this.meshIdentity(ep);
    return identity !== undefined
      ? connectMtls(this.creds, ep.ip, ep.port, identity, [], this.timeoutMs)
      : this.tcp(ep);
  }

  private tcp(ep: Endpoint): Socket {
    const s = dialTcp(ep.ip, ep.port);
    armConnectTimeout(s, this.timeoutMs, ep.key);
    return s;
  }

  close(): void {
    this.closed = true;
    this.meshed.close();
    this.plainH2.close();
    this.h1.close();
  }
}
