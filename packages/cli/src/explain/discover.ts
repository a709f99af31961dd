// Asks destination what the proxy would be told: Get(name:port) for a service name, or
// GetProfile(ip:port) → its fully-qualified name → Get for an address, as the proxy's outbound
// discovery does. Plaintext gRPC (a port-forward to destination's 8086, or the local process),
// first answer only, bounded by a timeout.
import { credentials, type ClientReadableStream } from '@grpc/grpc-js';
import { addressKey, parseIp } from '@minimesh/config';
import { destination, fromTcpAddress } from '@minimesh/proto';
import type { DiscoveredEndpoint, Discovery } from './describe.js';

export interface DiscoverOptions {
  /** destination's gRPC address, host:port. */
  addr: string;
  host: string;
  port: number;
  /** {"ns","nodeName","pod"} of the asking pod. */
  contextToken: string;
  timeoutMs?: number;
}

function firstMessage<T>(stream: ClientReadableStream<T>, timeoutMs: number, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stream.cancel();
      reject(new Error(`${what}: no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    stream.once('data', (msg: T) => {
      clearTimeout(timer);
      stream.cancel();
      resolve(msg);
    });
    stream.once('error', (err: Error & { code?: number }) => {
      clearTimeout(timer);
      if (err.code === 1) return; // CANCELLED by us after the answer
      reject(new Error(`${what}: ${err.message}`, { cause: err }));
    });
    stream.once('end', () => {
      clearTimeout(timer);
      reject(new Error(`${what}: stream ended without an answer`));
    });
  });
}

export function toDiscoveredEndpoint(addr: destination.WeightedAddr): DiscoveredEndpoint {
  const a = fromTcpAddress(addr.addr);
  const id = addr.tlsIdentity?.strategy;
  const out: DiscoveredEndpoint = {
    addr: a ? addressKey(a.ip, a.port) : '?',
  };
  if (id?.$case === 'dnsLikeIdentity') out.identity = id.value.name;
  else if (id?.$case === 'uriLikeIdentity') out.identity = id.value.uri;
  const hint = addr.protocolHint?.protocol?.$case;
  if (hint) out.protocolHint = hint;
  return out;
}

/** The first Update of a Get stream → discovery. */
export function fromUpdate(authority: string, via: Discovery['via'], update: destination.Update): Discovery {
  const u = update.update;
  if (u?.$case === 'add') return { authority, via, exists: true, endpoints: u.value.addrs.map(toDiscoveredEndpoint) };
  if (u?.$case === 'noEndpoints') return { authority, via, exists: u.value.exists, endpoints: [] };
  return { authority, via, exists: true, endpoints: [] };
}

export async function discover(opts: DiscoverOptions): Promise<Discovery> {
  const timeoutMs = opts.timeoutMs ?? 3000;
  const client = new destination.DestinationClient(opts.addr, credentials.createInsecure());
  try {
    const ip = parseIp(opts.host);
    if (!ip) {
      const authority = `${opts.host}:${opts.port}`;
      const update = await firstMessage(
        client.get({ scheme: 'k8s', path: authority, contextToken: opts.contextToken }),
        timeoutMs,
        `destination ${opts.addr} Get ${authority}`,
      );
      return fromUpdate(authority, 'authority', update);
    }
    const target = addressKey(opts.host, opts.port);
    const profile = await firstMessage(
      client.getProfile({ scheme: 'k8s', path: target, contextToken: opts.contextToken }),
      timeoutMs,
      `destination ${opts.addr} GetProfile ${target}`,
    );
    if (profile.endpoint) {
      // A pod IP: the proxy connects to that one endpoint.
      return {
        authority: target,
        via: 'profile',
        exists: true,
        endpoints: [toDiscoveredEndpoint(profile.endpoint)],
        opaqueProtocol: profile.opaqueProtocol,
      };
    }
    if (profile.fullyQualifiedName === '')
      return {
        authority: target,
        via: 'profile',
        exists: false,
        endpoints: [],
        opaqueProtocol: profile.opaqueProtocol,
      };
    const authority = `${profile.fullyQualifiedName}:${opts.port}`;
    const update = await firstMessage(
      client.get({ scheme: 'k8s', path: authority, contextToken: opts.contextToken }),
      timeoutMs,
      `destination ${opts.addr} Get ${authority}`,
    );
    return { ...fromUpdate(authority, 'profile', update), opaqueProtocol: profile.opaqueProtocol };
  } finally {
    client.close();
  }
}
