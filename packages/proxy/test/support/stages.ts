// What the stages' unit tests give a stage in place of its neighbours: a request that writes down what
// the stage did to it, and a next stage that writes down what it was handed.
import type { Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import type { ExchangeObserver, HttpExchange } from '../../src/http/exchange.js';
import type { IncomingRequest } from '../../src/http/handoff.js';
import type { Connected, HttpUpstream } from '../../src/http/upstream.js';
import type { UpgradeExchange } from '../../src/http/upgrade.js';
import {
  keyOf,
  plainEndpoint,
  toAddr,
  type Concrete,
  type Endpoint,
  type InboundConn,
  type Logical,
} from '../../src/targets.js';

/** A request (an exchange, or with `upgrade` an HTTP/1 Upgrade) that records what the stages did with it. */
export class FakeRequest {
  protocol: 'http1' | 'h2' = 'http1';
  upgrade = false;
  upgradedHttp1 = false;
  grpc = false;
  method = 'GET';
  path = '/';
  scheme: 'http' | 'https' = 'http';
  peer = { ip: '127.0.0.1', port: 50000 };
  downstream = new PassThrough();
  requestTimeoutMs = 0;
  headers: Record<string, string | string[] | undefined> = {};
  /** What happened to it, in order: "reject <code>", "fail <code>", "answer <status>", "forward", "observe". */
  readonly events: string[] = [];
  forwarded: Connected | undefined;
  observer: ExchangeObserver | undefined;
  omit: ((name: string) => boolean) | undefined;

  constructor(
    public authority: string | undefined = undefined,
    opts: Partial<FakeRequest> = {},
  ) {
    Object.assign(this, opts);
  }

  get observable(): HttpExchange | undefined {
    return this.upgrade ? undefined : (this as unknown as HttpExchange);
  }

  get exchange(): HttpExchange | undefined {
    return this.upgrade ? undefined : (this as unknown as HttpExchange);
  }

  /** A route's response header filters (the route stage sets them). */
  editResponse: ((headers: Record<string, unknown>) => void) | undefined = undefined;
  /** What sendTo was asked (a mirror's copy): "<endpoint> <authority>". */
  readonly sent: string[] = [];
  hasBody = false;

  rewrite(authority: string | undefined, path: string | undefined): void {
    if (authority !== undefined) this.authority = authority;
    if (path !== undefined) this.path = path;
    this.events.push(`rewrite ${authority ?? '-'} ${path ?? '-'}`);
  }

  sendTo(up: HttpUpstream): undefined {
    this.sent.push(up.endpoint.key);
    return undefined;
  }

  reject(err: unknown): void {
    this.events.push(`reject ${code(err)}`);
  }

  fail(err: unknown): void {
    this.events.push(`fail ${code(err)}`);
  }

  answer(status: number, message: string, location: string | undefined, grpcStatus?: number): void {
    const grpc = grpcStatus !== undefined ? ` grpc-status ${grpcStatus}` : '';
    this.events.push(`answer ${status} ${message}${location ? ` ${location}` : ''}${grpc}`);
  }

  forward(t: Connected): void {
    this.forwarded = t;
    this.events.push('forward');
  }

  stripHeaders(omit: (name: string) => boolean): void {
    this.omit = omit;
    for (const name in this.headers) if (omit(name)) delete this.headers[name];
  }

  observe(observer: ExchangeObserver | undefined): void {
    this.observer = observer;
    this.events.push('observe');
  }

  /** As the type the stages take. */
  get asIncoming(): IncomingRequest {
    return this as unknown as HttpExchange | UpgradeExchange;
  }
}

function code(err: unknown): string {
  return (err as { code?: string }).code ?? String(err);
}

/** A next stage that records each (target, request) it is handed. */
export function recorder<T, R>(): { calls: Array<[T, R]>; next: (target: T, req: R) => void } {
  const calls: Array<[T, R]> = [];
  return { calls, next: (target, req) => void calls.push([target, req]) };
}

/** A connection-level next stage that records each target. */
export function targets<T>(): { seen: T[]; next: (target: T) => void } {
  const seen: T[] = [];
  return { seen, next: (target) => void seen.push(target) };
}

/** An endpoint destination named (meshed when `identity`), with a load estimate. */
export function discovered(ip: string, port: number, identity?: string): Endpoint {
  return { ...plainEndpoint(ip, port), identity, discovered: true, labels: { pod: `pod-${ip}` } };
}

export function balancedConcrete(authority: string, list: Endpoint[]): Concrete {
  return { kind: 'balanced', authority, set: { list } };
}

export function logicalOf(concrete: Concrete, policy: Logical['policy'] = undefined): Logical {
  return { authority: concrete.authority, policy, concrete };
}

export function inboundConn(port = 8080, over: Partial<InboundConn> = {}): InboundConn {
  return {
    orig: toAddr('10.0.0.9', port),
    clientIp: '10.0.0.7',
    tls: 'true',
    clientId: 'web.shop.serviceaccount.identity.minimesh.cluster.local',
    sni: undefined,
    ...over,
  };
}

/** A socket stand-in with what stages read of one (and a record of destroy/reset). */
export function fakeSocket(remoteAddress = '10.0.0.7'): Socket & { destroyedBy: string[] } {
  const s = new PassThrough() as unknown as Socket & { destroyedBy: string[] };
  s.destroyedBy = [];
  Object.assign(s, { remoteAddress, remotePort: 40000 });
  const destroy = s.destroy.bind(s);
  (s as { destroy: (err?: Error) => unknown }).destroy = (err?: Error) => {
    s.destroyedBy.push('destroy');
    return destroy(err);
  };
  (s as { resetAndDestroy?: () => unknown }).resetAndDestroy = () => {
    s.destroyedBy.push('reset');
    return destroy();
  };
  return s;
}

/** A connector that writes down what it was asked for: HTTP upstreams (HTTP/1 pools) and raw connections. */
export function fakeConnector(stream: () => Socket = () => fakeSocket()) {
  const asked: string[] = [];
  return {
    asked,
    meshIdentity: (ep: Endpoint) => ep.identity,
    http: (ep: Endpoint, protocol: 'http1' | 'h2'): HttpUpstream => {
      asked.push(`http ${ep.key} ${protocol}`);
      return { kind: 'h1', endpoint: ep, agent: undefined as never };
    },
    stream: (ep: Endpoint): Socket => {
      asked.push(`stream ${ep.key}`);
      return stream();
    },
  };
}

export { keyOf, toAddr };
