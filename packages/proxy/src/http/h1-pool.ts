// The HTTP/1 keep-alive pool: the connections the proxy sends HTTP/1 on (the inbound proxy to its app,
// either proxy to an unmeshed endpoint), one free list per endpoint, each connection an H1Connection
// (h1-client.ts: the request written and the response parsed on Node's llhttp binding). It began as the
// replacement of http.Agent (whose addRequest copied its options into a prototype-less object per
// request, worked out a TLS server name from the Host header, reset the socket's async ids and set TCP
// keep-alive again on every reuse: about 6 % of the inbound proxy's busy time, 2026-11-28). A request
// takes the most recently freed connection of its endpoint (last in, first out) or opens one; a response
// parsed to its end, its request sent, gives the connection back.
//
// Kept from the Agent: no cap on connections (a request never waits for one), at most 1,024 idle ones
// per endpoint, TCP_NODELAY, TCP keep-alive probes after 1 s idle, idle connections not holding the
// process open, `reusedSocket` (what the keep-alive race is recognised by: H1Call), connect errors
// reaching the request unchanged (the exchange maps them). Added: an idle connection is not reused after
// CLIENT_IDLE_TIMEOUT_MS (the hour the proxy's own servers keep a client's, docs/reliability.md), nor
// within a second of the idle timeout a server announced (`Keep-Alive: timeout=N`), which the Agent
// honoured only when given a timeout of its own; such a connection is closed by the pool, which knows it
// is unused, instead of racing the server's close. An Upgrade (WebSocket) never comes here: it gets a
// raw connection of its own (upgrade.ts).
import { CLIENT_IDLE_TIMEOUT_MS } from './handoff.js';
import { H1Connection, type ConnectionOwner } from './h1-client.js';

/** At most this many idle connections per endpoint (the Agent's maxFreeSockets here). */
export const MAX_IDLE_PER_ENDPOINT = 1024;
/** A server's announced keep-alive timeout is cut by this much (Node's agent does the same). */
const SERVER_HINT_MARGIN_MS = 1000;

export interface H1PoolOptions {
  /** How long a connection may sit idle and still be reused. */
  idleTimeoutMs?: number;
  /** How often idle connections past their time are closed (and endpoints without any forgotten). */
  sweepIntervalMs?: number;
  maxIdlePerEndpoint?: number;
}

export class H1Pool {
  private readonly endpoints = new Map<string, H1Endpoint>();
  private readonly sweeper: NodeJS.Timeout;
  readonly idleTimeoutMs: number;
  readonly maxIdle: number;
  closed = false;

  constructor(opts: H1PoolOptions = {}) {
    this.idleTimeoutMs = opts.idleTimeoutMs ?? CLIENT_IDLE_TIMEOUT_MS;
    this.maxIdle = opts.maxIdlePerEndpoint ?? MAX_IDLE_PER_ENDPOINT;
    const every = opts.sweepIntervalMs ?? Math.min(60_000, this.idleTimeoutMs);
    this.sweeper = setInterval(() => this.sweep(), every);
    this.sweeper.unref();
  }

  /** The pool of the endpoint at `ip:port` (`key`: the endpoint's key). */
  endpoint(key: string, ip: string, port: number): H1Endpoint {
    let e = this.endpoints.get(key);
    if (e === undefined) {
      e = new H1Endpoint(this, key, ip, port);
      this.endpoints.set(key, e);
    }
    return e;
  }

  /** An endpoint forgotten by a sweep that is used again (a request still held it). */
  reattach(e: H1Endpoint): void {
    if (!this.endpoints.has(e.key)) this.endpoints.set(e.key, e);
  }

  /** Idle connections and endpoints the pool holds (for tests and the admin's curious). */
  stats(): { endpoints: number; idle: number; open: number } {
    let idle = 0;
    let open = 0;
    for (const e of this.endpoints.values()) {
      idle += e.idleCount;
      open += e.openCount;
    }
    return { endpoints: this.endpoints.size, idle, open };
  }

  /** Closes idle connections past their time; forgets endpoints with no connection at all. */
  sweep(now = Date.now()): void {
    for (const [key, e] of this.endpoints) {
      e.closeExpired(now);
      if (e.openCount === 0) {
        this.endpoints.delete(key);
        e.detached = true;
      }
    }
  }

  /** Destroys every connection, busy or idle; later requests still work (they open new ones). */
  close(): void {
    this.closed = true;
    clearInterval(this.sweeper);
    for (const e of this.endpoints.values()) e.destroyAll();
    this.endpoints.clear();
  }
}

/** One endpoint's connections: `acquire()` gives a request one (idle, or new); its end gives it back. */
export class H1Endpoint implements ConnectionOwner {
  /** Idle connections, the most recently freed last. */
  private readonly idle: H1Connection[] = [];
  private readonly open = new Set<H1Connection>();
  detached = false;

  constructor(
    private readonly pool: H1Pool,
    readonly key: string,
    readonly ip: string,
    readonly port: number,
  ) {}

  get idleCount(): number {
    return this.idle.length;
  }

  get openCount(): number {
    return this.open.size;
  }

  /** A connection for one request: the most recently freed idle one still usable, or a new one. */
  acquire(): H1Connection {
    if (this.detached) {
      this.detached = false;
      this.pool.reattach(this);
    }
    const idle = this.idle;
    if (idle.length > 0) {
      const now = Date.now();
      let c: H1Connection | undefined;
      while ((c = idle.pop()) !== undefined) {
        if (c.destroyed) continue;
        if (c.deadline <= now) {
          c.abort();
          continue;
        }
        c.reusedSocket = true;
        c.socket.ref();
        return c;
      }
    }
    const c = new H1Connection(this.ip, this.port, this);
    this.open.add(c);
    return c;
  }

  /** The exchange on `c` is over and both sides keep the connection: idle again, or closed. */
  release(c: H1Connection, keepAliveHint: string | undefined): void {
    if (c.destroyed) return;
    if (!c.socket.writable || this.pool.closed || this.idle.length >= this.pool.maxIdle) {
      c.abort();
      return;
    }
    const now = Date.now();
    let deadline = now + this.pool.idleTimeoutMs;
    if (keepAliveHint !== undefined) {
      const announced = serverIdleTimeoutMs(keepAliveHint);
      if (announced !== undefined) {
        const usable = announced - SERVER_HINT_MARGIN_MS;
        if (usable <= 0) {
          c.abort();
          return;
        }
        if (now + usable < deadline) deadline = now + usable;
      }
    }
    c.deadline = deadline;
    c.socket.unref();
    this.idle.push(c);
  }

  forget(c: H1Connection): void {
    this.open.delete(c);
    const i = this.idle.indexOf(c);
    if (i !== -1) this.idle.splice(i, 1);
  }

  closeExpired(now: number): void {
    // Oldest first: they are at the bottom of the stack.
    for (const c of this.idle.slice()) if (c.deadline <= now) c.abort();
  }

  destroyAll(): void {
    for (const c of [...this.open]) c.abort();
  }
}

/** The idle timeout a server announced in `Keep-Alive: timeout=N[, max=M]`, in ms; undefined without one. */
export function serverIdleTimeoutMs(header: string): number | undefined {
  // A server sends the same value on every response: the last one parsed is kept.
  if (header === lastHint) return lastHintMs;
  const m = /(?:^|[,\s])timeout=(\d+)/i.exec(header);
  lastHint = header;
  lastHintMs = m === null ? undefined : Number(m[1]) * 1000;
  return lastHintMs;
}
let lastHint: string | undefined;
let lastHintMs: number | undefined;
