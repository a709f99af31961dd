// The connector: Endpoint → an upstream to send on, for both directions (the connect stages use it). Meshed endpoints (an identity, and a
// certificate of ours to present) get ONE multiplexed HTTP/2 session over mTLS that HTTP/1 rides too,
// upgraded; unmeshed endpoints (and the app behind the inbound proxy) get an HTTP/1 keep-alive pool or
// a plaintext HTTP/2 session. TCP gets a fresh connection (mTLS when meshed).
import { Agent, type AgentOptions } from 'node:http';
import { connect as netConnect, type Socket } from 'node:net';
import type { ClientHttp2Session } from 'node:http2';
import { H2Pool } from '../http/h2-pool.js';
import type { HttpUpstream } from '../http/upstream.js';
import { armConnectTimeout, connectMtls } from '../tls/connect.js';
import type { TlsCredentials } from '../tls/credentials.js';
import type { Endpoint } from '../targets.js';

/** Background reconnects to a broken endpoint: 100 ms, doubling, at most every 10 s. */
const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 10_000;
/**
 * A broken endpoint stays out of balancing at least this long even when a reconnect works sooner (an
 * ejection time, as Envoy's outlier detection has): a killed pod's proxy is restarted by the kubelet
 * within a second or two, before its app listens and before the API server has marked the pod not ready;
 * by then destination has dropped it.
 */
export const MIN_EJECTION_MS = 3000;

export class Connector {
  /** Sessions to meshed endpoints; one that breaks takes its endpoint out of balancing until a reconnect works. */
  readonly meshed = new H2Pool(60_000, (ep) => this.broken(ep as Endpoint));
  private closed = false;
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
      const session = this.meshedSession(ep, identity);
      return { kind: 'h2', endpoint: ep, identity, session, pool: this.meshed };
    }
    if (protocol === 'http1') return { kind: 'h1', endpoint: ep, agent: this.agent };
    const session = this.plainH2.get(ep.key, () => this.tcp(ep));
    return { kind: 'h2', endpoint: ep, identity: undefined, session, pool: this.plainH2 };
  }

  private meshedSession(ep: Endpoint, identity: string): ClientHttp2Session {
    // The endpoint rides along (only balanced ones: they have a load estimate to mark not ready).
    return this.meshed.get(
      `${ep.key}#${identity}`,
      () => connectMtls(this.creds, ep.ip, ep.port, identity, ['h2'], this.timeoutMs),
      ep.load !== undefined ? ep : undefined,
    );
  }

  /**
   * A meshed endpoint's session broke (reset, refused, TLS failure, closed by the peer): the balancer
   * leaves the endpoint out while it reconnects in the background, with backoff, without a request on
   * the line. A pod killed mid-stream then fails only the requests in flight on it, not the ones sent
   * until destination learns it is gone. The reconnect stops once the endpoint is dropped (garbage).
   */
  private broken(ep: Endpoint): void {
    const load = ep.load;
    if (!load || this.closed) return;
    load.ready = false;
    load.ejectedUntil = Date.now() + MIN_EJECTION_MS;
    if (load.reconnecting) return;
    load.reconnecting = true;
    const delay = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** Math.min(load.failures, 10));
    load.failures++;
    const ref = new WeakRef(ep);
    setTimeout(() => {
      const e = ref.deref();
      if (!e?.load) return;
      e.load.reconnecting = false;
      const identity = this.closed ? undefined : this.meshIdentity(e);
      if (identity === undefined) return;
      const session = this.meshedSession(e, identity);
      const up = () => {
        const l = e.load;
        if (!l || l.reconnecting) return;
        const wait = l.ejectedUntil - Date.now();
        if (wait > 0) {
          setTimeout(up, wait).unref();
          return;
        }
        l.ready = true;
        l.failures = 0;
      };
      if (session.connecting) session.once('connect', up);
      else if (!session.destroyed && !session.closed) up();
    }, delay).unref();
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
    this.closed = true;
    this.meshed.close();
    this.plainH2.close();
    this.agent.destroy();
  }
}
