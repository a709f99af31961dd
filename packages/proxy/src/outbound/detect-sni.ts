// Outbound SNI detection: TlsConn<Accept> → Sni<Accept>. A connection whose outbound policy routes TLS
// (the tls protocol) is read up to the end of its TLS ClientHello — peeked, never terminated: the bytes
// are kept and replayed to the upstream first (tls/client-hello.ts parses the server_name extension,
// across as many TLS records and reads as the client splits it into). As linkerd2-proxy's
// NewDetectRequiredSni (linkerd/tls/src/server/required_sni.rs) the SNI is required: a connection that
// does not start with a ClientHello, whose ClientHello names no server, or that sends none within the
// detect timeout is refused (reset; proxy_errors_total MINIMESH_PROXY_ROUTE_NOT_FOUND: no route can
// be picked for it), and counted in no route's metrics.
import type { Logger } from '@minimesh/runtime';
import { peek } from '../detect/detect.js';
import { unshiftPrefix } from '../detect/socket-prefix.js';
import type { Handler, Layer } from '../layers.js';
import { resetSocket } from '../respond.js';
import type { Accept, Sni, TlsConn } from '../targets.js';
import { parseClientHello, type ClientHelloResult } from '../tls/client-hello.js';
import type { RefusalCode } from './egress-tcp.js';

export interface DetectSniOptions {
  /** How long the ClientHello may take (the detect timeout, as linkerd2-proxy's detect_protocol_timeout). */
  timeoutMs: number;
  /** Counts a refused connection (proxy_errors_total). */
  error: (code: RefusalCode) => void;
  log: Logger;
}

const NOT_TLS: ClientHelloResult = { kind: 'not-tls' };

export function pushDetectSni(opts: DetectSniOptions): Layer<Handler<Sni<Accept>>, Handler<TlsConn<Accept>>> {
  const { timeoutMs, log } = opts;
  return (next) => async (t) => {
    const { socket } = t;
    unshiftPrefix(socket, t.prefix);
    const r = await peek(socket, parseClientHello, timeoutMs, NOT_TLS);
    if (r.ended && r.prefix.length === 0) {
      socket.destroy();
      return;
    }
    const hello = r.result;
    if (hello === 'more' || hello.kind !== 'tls' || hello.sni === undefined) {
      opts.error('MINIMESH_PROXY_ROUTE_NOT_FOUND');
      log.debug(
        { dst: t.parent.orig?.key, bytes: r.prefix.length },
        hello !== 'more' && hello.kind === 'tls'
          ? 'TLS connection refused: its ClientHello names no server (SNI), which its TLS routes need'
          : 'TLS connection refused: it did not start with a TLS ClientHello',
      );
      resetSocket(socket);
      return;
    }
    return next({ parent: t.parent, socket, prefix: r.prefix, policy: t.policy, sni: hello.sni });
  };
}
