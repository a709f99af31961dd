// Outbound discover for opaque connections: by the original destination (destination/discovery.ts): a
// ClusterIP's Service endpoints, a pod's own endpoint, or the address itself in plaintext. A connection
// without an original destination (it reached the proxy directly) goes nowhere.
import type { Discovery } from '../destination/discovery.js';
import type { CompiledTransportBackend } from '@minimesh/policy/client';
import { ProxyError } from '../errors.js';
import type { Handler, Layer, RequestHandler } from '../layers.js';
import type { TcpStream } from '../tcp/stream.js';
import { plainEndpoint, type Accept, type Concrete, type Opaque } from '../targets.js';

export function pushDiscoverTcp(opts: {
  discovery: Discovery;
  /** The opaque connection as a request the later stages can refuse. */
  stream: (target: Opaque<Accept>) => TcpStream;
}): Layer<RequestHandler<Concrete, TcpStream>, Handler<Opaque<Accept>>> {
  // One Concrete per Forward backend of a compiled policy.
  const forwards = new WeakMap<CompiledTransportBackend, Concrete>();
  return (next) => async (target) => {
    const stream = opts.stream(target);
    const backend = target.backend;
    if (backend?.kind === 'forward') {
      let c = forwards.get(backend);
      if (c === undefined) {
        const endpoint = plainEndpoint(backend.addr.ip, backend.addr.port);
        forwards.set(backend, (c = { kind: 'forward', authority: endpoint.key, endpoint }));
      }
      return next(c, stream);
    }
    if (backend?.kind === 'balancer') {
      const known = opts.discovery.httpNow(backend.authority, undefined);
      if (known !== undefined) return next(known.concrete, stream);
      let found: Concrete;
      try {
        found = (await opts.discovery.http(backend.authority, undefined)).concrete;
      } catch (err) {
        return stream.reject(
          new ProxyError('MINIMESH_PROXY_NO_ENDPOINTS', `backend ${backend.authority}: no endpoints`, { cause: err }),
        );
      }
      return next(found, stream);
    }
    const orig = target.parent.orig;
    if (!orig)
      return stream.reject(
        new ProxyError('MINIMESH_PROXY_NO_ORIGINAL_DST', 'outbound opaque connection without an original destination'),
      );
    let concrete: Concrete;
    try {
      concrete = (await opts.discovery.tcp(orig)).concrete;
    } catch (err) {
      return stream.reject(err);
    }
    next(concrete, stream);
  };
}
