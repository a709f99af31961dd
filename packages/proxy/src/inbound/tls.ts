// Inbound TLS: InboundAccept → InboundConn, from the ClientHello (tls/terminate.ts). SNI equal to our
// identity → we terminate mTLS and learn the client's identity; HTTP/2 (ALPN h2) then goes straight to
// the HTTP server, anything else to detection on the decrypted stream. Other TLS passes through
// untouched (detection skipped: it is opaque); no ClientHello → plaintext, to detection. The connection
// is counted here, once its labels (TLS, client identity, SNI) are known.
import type { Logger } from '@minimesh/runtime';
import type { HttpHandoff } from '../http/handoff.js';
import type { Handler, Layer } from '../layers.js';
import { trackSocket, type ProxyMetrics } from '../metrics/metrics.js';
import type { InboundLabels } from '../metrics/traffic-labels.js';
import type { InboundAccept, InboundConn, Prefixed } from '../targets.js';
import { createTlsTerminator, peekTls } from '../tls/terminate.js';
import type { TlsCredentials } from '../tls/credentials.js';

/** Short ClientHello wait on opaque ports, so an unmeshed server-speaks-first client is barely delayed. */
const OPAQUE_TLS_PEEK_MS = 300;
const EMPTY = Buffer.alloc(0);

/** Detection's target: a connection, the bytes read so far, and whether it is opaque already (TLS passed through). */
export type Detecting = Prefixed<InboundConn> & { readonly opaque: boolean };

export interface InboundTlsOptions {
  creds: TlsCredentials;
  metrics: ProxyMetrics;
  labels: InboundLabels;
  log: Logger;
  /** Ports whose traffic is opaque (configured or by policy): their ClientHello wait is short. */
  opaquePort: (port: number) => boolean;
  detectTimeoutMs: number;
  /** Where HTTP/2 over our mTLS (ALPN h2) goes. */
  http: HttpHandoff<InboundConn>;
}

export function pushTls(opts: InboundTlsOptions): Layer<Handler<Detecting>, Handler<InboundAccept>> {
  const { creds, metrics, labels } = opts;
  const count = (conn: InboundConn, socket: Parameters<typeof trackSocket>[0]) =>
    trackSocket(socket, metrics.connection(labels.of(conn, undefined)));
  return (next) => {
    const tls = createTlsTerminator({
      creds,
      metrics,
      log: opts.log,
      http: opts.http,
      onIdentified: count,
      onDecrypted: (parent, socket) => {
        const pending = next({ parent, socket, prefix: EMPTY, opaque: false });
        if (pending)
          pending.catch((err: unknown) => {
            opts.log.warn({ err }, 'inbound connection failed');
            socket.destroy();
          });
      },
    });
    return async (accepted) => {
      const { socket, orig, clientIp } = accepted;
      const timeoutMs = opts.opaquePort(orig.port)
        ? Math.min(OPAQUE_TLS_PEEK_MS, opts.detectTimeoutMs)
        : opts.detectTimeoutMs;
      const peeked = await peekTls(socket, creds.localIdentity, timeoutMs);
      if (peeked.ended && peeked.prefix.length === 0) return void socket.destroy();
      if (peeked.tls.kind === 'terminate' && creds.context) return tls.terminate(accepted, peeked.prefix);
      const passthrough = peeked.tls.kind !== 'plaintext';
      const conn: InboundConn = passthrough
        ? {
            orig,
            clientIp,
            tls: 'opaque',
            clientId: undefined,
            sni: peeked.tls.kind === 'passthrough' ? peeked.tls.sni : creds.localIdentity,
          }
        : { orig, clientIp, tls: 'no_identity', clientId: undefined, sni: undefined };
      count(conn, socket);
      await next({ parent: conn, socket, prefix: peeked.prefix, opaque: passthrough });
    };
  };
}
