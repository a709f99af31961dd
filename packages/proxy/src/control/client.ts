// gRPC clients for the control plane (destination, identity), following Linkerd's rule: a loopback
// *_ADDR means plaintext; otherwise TLS 1.3 whose SNI and expected server identity are *_NAME, verified
// against the trust anchors (the server side is the control-plane pod's inbound proxy, which terminates
// mTLS and forwards to the local gRPC port). Before the proxy has a certificate (bootstrap, for identity)
// it dials without a client certificate; afterwards it presents its leaf.
import { credentials, type ChannelCredentials, type ChannelOptions } from '@grpc/grpc-js';
import type { ControlAddr } from '../config/proxy.js';
import type { TlsCredentials } from '../tls/credentials.js';
import { checkPeerIdentity } from '../tls/credentials.js';

export interface ControlChannel {
  target: string;
  credentials: ChannelCredentials;
  options: ChannelOptions;
}

/** Channel settings for a control-plane service, with or without our client certificate. */
export function controlChannel(addr: ControlAddr, tls: TlsCredentials): ControlChannel {
  const options: ChannelOptions = {
    'grpc.keepalive_time_ms': 10_000,
    'grpc.keepalive_timeout_ms': 3_000,
    'grpc.initial_reconnect_backoff_ms': 250,
    'grpc.max_reconnect_backoff_ms': 10_000,
  };
  if (addr.plaintext || addr.name === undefined) {
    return { target: addr.addr, credentials: credentials.createInsecure(), options };
  }
  const cert = tls.certificate;
  const creds = credentials.createSsl(
    Buffer.from(tls.trustAnchorsPem),
    cert ? Buffer.from(cert.keyPem) : null,
    cert ? Buffer.from(cert.chainPem) : null,
    { checkServerIdentity: checkPeerIdentity(addr.name) },
  );
  options['grpc.ssl_target_name_override'] = addr.name;
  options['grpc.default_authority'] = addr.name;
  return { target: addr.addr, credentials: creds, options };
}
