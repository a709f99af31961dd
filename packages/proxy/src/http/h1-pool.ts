// The HTTP/1 keep-alive pool: the connections the proxy sends HTTP/1 on (the inbound proxy to its app,
// either proxy to an unmeshed endpoint), one free list per endpoint, handed to Node's ClientRequest as
// its `agent`. It does what http.Agent did for us and no more: Agent.addRequest copies its options into
// a prototype-less object per request, works out a TLS server name from the Host header, resets the
// socket's async ids and sets TCP keep-alive again on every reuse, and keeps its busy sockets in arrays
// it searches on each release (about 6 % of the inbound proxy's busy time in a CPU profile, 2026-11-28).
// Here a request takes the most recently freed connection of its endpoint (last in, first out, as the
// Agent was set up) or opens one; a response read to its end gives the connection back.
//
// Kept from the Agent: no cap on connections (a request never waits for one), at most 1,024 idle ones
// per endpoint, TCP_NODELAY, TCP keep-alive probes after 1 s idle, idle connections not holding the
// process open, `req.reusedSocket` (what the keep-alive race is recognised by: H1Call), an upgraded
// connection leaving the pool, connect errors reaching the request unchanged (the exchange maps them).
// Added: an idle connection is not reused after CLIENT_IDLE_TIMEOUT_MS (the hour the proxy's own
// servers keep a client's, docs/reliability.md), nor within a second of the idle timeout a server
// announced (`Keep-Alive: timeout=N`), which the Agent honoured only when given a timeout of its own;
// such a connection is closed by the pool, which knows it is unused, instead of racing the server's close.
import { connect, type Socket } from 'node:net';
import type { Agent, ClientRequest, IncomingMessage } from 'node:http';
import { CLIENT_IDLE_TIMEOUT_MS } from './handoff.js';

/** At most this many idle connections per endpoint (the Agent's maxFreeSockets here). */
export const MAX_IDLE_PER_ENDPOINT = 1024;
/** A server's announced keep-alive timeout is cut by this much (Node's agent does the same). */
const SERVER_HINT_MARGIN_MS = 1000;

/** The pool's state on each of its connections. */
const kDeadline = Symbol('h1-pool idle deadline');
type PoolSocket = Socket & {
  [kDeadline]: number;
  _httpMessage?: (ClientRequest & { res?: IncomingMessage | null }) | null;
};

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

  /** The endpoint's pool, as the `agent` of a ClientRequest to `ip:port` (`key`: the endpoint's key). */
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

/**
 * One endpoint's connections, in the shape ClientRequest wants of an agent: `addRequest(req)` gives the
 * request a socket (`req.onSocket`), and the request emits 'free' on the socket once its response has
 * been read to the end on a connection both sides keep alive.
 */
export class H1Endpoint {
  // What ClientRequest reads of its agent: a keep-alive pool (so it sends Connection: keep-alive and
  // keeps the connection), plain http, port 80 as the default its Host header leaves out.
  readonly keepAlive = true;
  readonly maxSockets = Infinity;
  readonly protocol = 'http:';
  readonly defaultPort = 80;
  readonly options = {};
  /** Idle connections, the most recently freed last. */
  private readonly idle: PoolSocket[] = [];
  private readonly open = new Set<PoolSocket>();
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

  /** This, as the type ClientRequest's options want. */
  get agent(): Agent {
    return this as unknown as Agent;
  }

  addRequest(req: ClientRequest): void {
    if (this.detached) {
      this.detached = false;
      this.pool.reattach(this);
    }
    const idle = this.idle;
    if (idle.length > 0) {
      const now = Date.now();
      let s: PoolSocket | undefined;
      while ((s = idle.pop()) !== undefined) {
        if (s.destroyed) continue;
        if (s[kDeadline] <= now) {
          s.destroy();
          continue;
        }
        req.reusedSocket = true;
        s.ref();
        req.onSocket(s);
        return;
      }
    }
    req.onSocket(this.connect());
  }

  private connect(): PoolSocket {
    const s = connect({
      host: this.ip,
      port: this.port,
      noDelay: true,
      keepAlive: true,
      keepAliveInitialDelay: 1000,
    }) as PoolSocket;
    s[kDeadline] = Infinity;
    this.open.add(s);
    const onFree = () => this.free(s);
    const onClose = () => this.forget(s);
    const onRemove = () => {
      // An upgraded (101) connection belongs to whoever took it now.
      this.open.delete(s);
      s.removeListener('free', onFree);
      s.removeListener('close', onClose);
      s.removeListener('agentRemove', onRemove);
      s.removeListener('error', destroyOnError);
    };
    s.on('free', onFree);
    s.on('close', onClose);
    s.on('agentRemove', onRemove);
    // The request listens while it owns the socket; an idle one that fails is closed (and forgotten).
    s.on('error', destroyOnError);
    return s;
  }

  /** The request on `s` is over and both sides keep the connection: idle again, or closed. */
  private free(s: PoolSocket): void {
    const req = s._httpMessage;
    if (!req || !req.shouldKeepAlive || !s.writable || this.pool.closed || this.idle.length >= this.pool.maxIdle) {
      s.destroy();
      return;
    }
    const now = Date.now();
    let deadline = now + this.pool.idleTimeoutMs;
    const hint = req.res?.headers['keep-alive'];
    if (hint !== undefined) {
      const announced = serverIdleTimeoutMs(String(hint));
      if (announced !== undefined) {
        const usable = announced - SERVER_HINT_MARGIN_MS;
        if (usable <= 0) {
          s.destroy();
          return;
        }
        if (now + usable < deadline) deadline = now + usable;
      }
    }
    s._httpMessage = null;
    s[kDeadline] = deadline;
    s.unref();
    this.idle.push(s);
  }

  private forget(s: PoolSocket): void {
    this.open.delete(s);
    const i = this.idle.indexOf(s);
    if (i !== -1) this.idle.splice(i, 1);
  }

  closeExpired(now: number): void {
    // Oldest first: they are at the bottom of the stack.
    for (const s of this.idle.slice()) if (s[kDeadline] <= now) s.destroy();
  }

  destroyAll(): void {
    for (const s of [...this.open]) s.destroy();
  }
}

function destroyOnError(this: Socket): void {
  this.destroy();
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
