// An HTTP/1 Upgrade (WebSocket) as the stages see it: the request the HTTP/1 server (h1-server.ts) let go
// of, with its socket. It takes the same stages as an exchange (discover, balance, authorize, ...); the
// connect stage gives it a raw connection of its own, to which forward() replays the request head and
// then relays bytes both ways (tcp/relay.ts). Errors are answered with an HTTP/1 error response (respond.ts).
import type { Socket } from 'node:net';
import { toConnectError } from '../errors.js';
import { trackSocket } from '../metrics/metrics.js';
import { errorCode, respondUpgrade } from '../respond.js';
import { relay } from '../tcp/relay.js';
import type { ExchangeSink, HttpRequest } from './exchange.js';
import { requestHead } from './headers.js';
import type { Connected, StreamUpstream } from './upstream.js';
import type { H1Incoming } from './h1-wire.js';

export class UpgradeExchange implements HttpRequest {
  readonly protocol = 'http1';
  readonly upgrade = true;
  readonly grpc = false;
  /** Tap does not observe tunnels. */
  readonly observable = undefined;
  readonly exchange = undefined;
  /** Request headers left out of the replayed head (the inbound side leaves out the mesh's own). */
  private omit: ((lowerCaseName: string) => boolean) | undefined;

  constructor(
    readonly req: H1Incoming,
    readonly socket: Socket,
    /** Bytes after the request head that arrived with it. */
    readonly head: Buffer,
    private readonly sink: ExchangeSink,
  ) {
    this.method = req.method ?? 'GET';
    this.path = req.url ?? '/';
  }

  /** What the stages read of the request (Node's parsed head). */
  get authority(): string | undefined {
    return this.req.headers.host;
  }

  get headers(): H1Incoming['headers'] {
    return this.req.headers;
  }

  readonly method: string;
  readonly path: string;

  fail(err: unknown): void {
    respondUpgrade(this.socket, err);
  }

  reject(err: unknown): void {
    this.sink.metrics.error(this.sink.direction, errorCode(err));
    this.fail(err);
  }

  stripHeaders(omit: (lowerCaseName: string) => boolean): void {
    this.omit = omit;
  }

  /**
   * Replays the request to the connect stage's raw connection, then relays bytes both ways. Outbound
   * counts the response (101, once connected), the connection to the endpoint and a failed connect;
   * inbound counts only the request (its tunnel is to the app, whose connections it never counts).
   */
  forward(t: Connected): void {
    const up = t.upstream as StreamUpstream;
    const { socket, sink } = this;
    const labels = t.labels;
    const outbound = sink.direction === 'outbound';
    const t0 = sink.metrics.request(labels);
    if (outbound) trackSocket(up.socket, sink.metrics.connection(labels, 'dst'));
    const first = requestHead(this.req, this.omit, t.extra);
    relay(socket, up.socket, {
      first: this.head.length > 0 ? Buffer.concat([first, this.head]) : first,
      onConnect: outbound ? () => sink.metrics.response(labels, t0, 101, undefined, false) : undefined,
      onConnectError: (err) => {
        const e = toConnectError(up.endpoint.key, err, up.identity);
        if (outbound) sink.metrics.error(sink.direction, e.code);
        respondUpgrade(socket, e);
      },
    });
  }
}
