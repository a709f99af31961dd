// The proxy's TLS credentials: trust anchors plus the current leaf. One SecureContext is made per
// certificate and reused by every connection (never one per connection: nodejs/node#43128); a renewal
// swaps it atomically — connections that already started keep the context they began with.
import {
  createSecureContext,
  type PeerCertificate,
  type SecureContext,
  type TLSSocket,
  type TlsOptions,
} from 'node:tls';
import { X509Certificate as CryptoX509 } from 'node:crypto';

export interface Certificate {
  /** Leaf first, then intermediates. */
  chainPem: string;
  keyPem: string;
  leaf: CryptoX509;
  notAfter: Date;
}

export class TlsCredentials {
  readonly anchors: CryptoX509[];
  /** Trust anchors only: for dialing the identity service before we have a certificate. */
  readonly bootstrapContext: SecureContext;
  private current: { cert: Certificate; context: SecureContext } | undefined;
  private readonly listeners = new Set<(cert: Certificate) => void>();

  constructor(
    readonly localIdentity: string,
    readonly trustAnchorsPem: string,
  ) {
    this.anchors = splitPem(trustAnchorsPem).map((p) => new CryptoX509(p));
    if (this.anchors.length === 0) throw new Error('trust anchors: no certificate found in the PEM text');
    this.bootstrapContext = createSecureContext({ ca: trustAnchorsPem, minVersion: 'TLSv1.3' });
  }

  /** Installs a new certificate (from identity). Builds its SecureContext once. */
  set(cert: Certificate): void {
    const context = createSecureContext({
      cert: cert.chainPem,
      key: cert.keyPem,
      ca: this.trustAnchorsPem,
      minVersion: 'TLSv1.3',
      maxVersion: 'TLSv1.3',
    });
    this.current = { cert, context };
    for (const l of this.listeners) l(cert);
  }

  onChange(listener: (cert: Certificate) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get certificate(): Certificate | undefined {
    return this.current?.cert;
  }

  /** Our leaf + key + anchors; undefined until identity has issued a certificate. */
  get context(): SecureContext | undefined {
    return this.current?.context;
  }
}

export function splitPem(pem: string): string[] {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

export function derToPem(der: Buffer): string {
  const b64 = der.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n$/, '');
  return `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`;
}

/** The DNS names in a peer certificate's subjectAltName ("DNS:a, DNS:b"). */
export function dnsNames(cert: Pick<PeerCertificate, 'subjectaltname'> | undefined): string[] {
  const san = cert?.subjectaltname;
  if (!san) return [];
  return san
    .split(/,\s*/)
    .filter((s) => s.startsWith('DNS:'))
    .map((s) => s.slice(4));
}

/** The mesh identity a certificate names: its first DNS SAN (identity issues exactly one). */
export function identityOf(cert: Pick<PeerCertificate, 'subjectaltname'> | undefined): string | undefined {
  return dnsNames(cert)[0];
}

/**
 * checkServerIdentity for outbound mTLS: the peer's leaf must name exactly the expected identity.
 * (The chain itself is verified by OpenSSL against the trust anchors in the SecureContext.)
 */
export function checkPeerIdentity(expected: string) {
  return (_host: string, cert: PeerCertificate): Error | undefined => {
    const names = dnsNames(cert);
    if (names.includes(expected)) return undefined;
    const err = new Error(
      `peer certificate names ${names.join(', ') || 'no DNS identity'}, expected ${expected}`,
    ) as NodeJS.ErrnoException;
    err.code = 'MINIMESH_IDENTITY_MISMATCH';
    return err;
  };
}

/** True when `leaf` (with intermediates) chains to one of the anchors. Used where OpenSSL did not check. */
export function chainsToAnchors(chain: CryptoX509[], anchors: CryptoX509[]): boolean {
  let cur = chain[0];
  const rest = chain.slice(1);
  for (let depth = 0; cur && depth < 8; depth++) {
    const now = Date.now();
    if (Date.parse(cur.validFrom) > now || Date.parse(cur.validTo) < now) return false;
    for (const a of anchors) if (cur.checkIssued(a) && cur.verify(a.publicKey)) return true;
    const next: CryptoX509 | undefined = rest.find(
      (c) => cur !== undefined && cur.checkIssued(c) && cur.verify(c.publicKey),
    );
    if (!next) return false;
    cur = next;
  }
  return false;
}

/** The client's mesh identity on a terminated connection: only when its chain verifies against the anchors. */
export function clientIdentity(socket: TLSSocket, creds: TlsCredentials): string | undefined {
  const peer = socket.getPeerCertificate(true);
  if (!peer || !peer.raw) return undefined;
  if (!socket.authorized) {
    // OpenSSL checked against the same anchors; fall back to our own check for chains it could not build.
    const chain: CryptoX509[] = [];
    let c: typeof peer | undefined = peer;
    const seen = new Set<string>();
    while (c?.raw && !seen.has(c.fingerprint256)) {
      seen.add(c.fingerprint256);
      chain.push(new CryptoX509(c.raw));
      c = c.issuerCertificate;
    }
    if (!chainsToAnchors(chain, creds.anchors)) return undefined;
  }
  return identityOf(peer);
}

/**
 * Server-side mTLS as the proxy terminates it (inbound, and the tap server on the control port): TLS 1.3
 * with this proxy's current certificate, a client certificate requested but optional (clientIdentity()
 * then says who the client is, only when its chain verifies).
 */
export function mtlsServerOptions(creds: TlsCredentials): TlsOptions {
  return {
    SNICallback: (_name, cb) => cb(null, creds.context),
    requestCert: true,
    rejectUnauthorized: false,
    minVersion: 'TLSv1.3',
    maxVersion: 'TLSv1.3',
  };
}
