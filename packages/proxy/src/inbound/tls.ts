// Inbound TLS: peek the ClientHello. SNI equal to our identity → we terminate mTLS (TLS 1.3, client
// certificate requested but optional, its identity learned from the DNS SAN after the chain is verified
// against the trust anchors); any other TLS passes through untouched; no ClientHello → plaintext.
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { peek } from '../detect/detect.js';
import { parseClientHello } from '../tls/client-hello.js';
import { chainsToAnchors, identityOf, type TlsCredentials } from '../tls/credentials.js';

export type InboundTls =
  { kind: 'terminate' } | { kind: 'passthrough'; sni: string | undefined } | { kind: 'plaintext' };

export async function peekTls(
  socket: Socket,
  localIdentity: string,
  timeoutMs: number,
): Promise<{ tls: InboundTls; prefix: Buffer; ended: boolean }> {
  const r = await peek(
    socket,
    (buf) => {
      const h = parseClientHello(buf);
      return h === 'more' ? 'more' : h;
    },
    timeoutMs,
    { kind: 'not-tls' } as const,
  );
  const h = r.result;
  if (h.kind === 'not-tls') return { tls: { kind: 'plaintext' }, prefix: r.prefix, ended: r.ended };
  if (h.sni === localIdentity) return { tls: { kind: 'terminate' }, prefix: r.prefix, ended: r.ended };
  return { tls: { kind: 'passthrough', sni: h.sni }, prefix: r.prefix, ended: r.ended };
}

/** The client's mesh identity on a terminated connection: only when its chain verifies against the anchors. */
export function clientIdentity(socket: TLSSocket, creds: TlsCredentials): string | undefined {
  const peer = socket.getPeerCertificate(true);
  if (!peer || !peer.raw) return undefined;
  if (!socket.authorized) {
    // OpenSSL checked against the same anchors; fall back to our own check for chains it could not build.
    const chain: X509Certificate[] = [];
    let c: typeof peer | undefined = peer;
    const seen = new Set<string>();
    while (c?.raw && !seen.has(c.fingerprint256)) {
      seen.add(c.fingerprint256);
      chain.push(new X509Certificate(c.raw));
      c = c.issuerCertificate;
    }
    if (!chainsToAnchors(chain, creds.anchors)) return undefined;
  }
  return identityOf(peer);
}
