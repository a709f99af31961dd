// Outbound discover for opaque connections: by the original destination (destination/discovery.ts): a
// ClusterIP's Service endpoints, a pod's own endpoint, or the address itself in plaintext. A connection
// without an original destination (it reached the proxy directly) goes nowhere.
import type { Discovery } from '../destination/discovery.js';
import { ProxyError } from '../errors.js';
import type { Handler, Layer, RequestHandler } from '../layers.js';
import type { TcpStream } from '../tcp/stream.js';
import type { Accept, Concrete, Opaque } from '../targets.js';

export function pushDiscoverTcp(opts: {
  discovery: Discovery;
  /** The opaque connection as a request the later stages can refuse. */
  stream: (target: Opaque<Accept>) => TcpStream;
}): Layer<RequestHandler<Concrete, TcpStream>, Handler<Opaque<Accept>>> {
  return (next) => async (target) => {
    const stream = opts.stream(target);
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
