// Dials a proxy's tap server with grpc-js. In the cluster the channel is plaintext: the tap service's
// own proxy (outbound) turns it into mTLS to the target pod's proxy, with this pod's identity.
import { credentials as grpcCredentials, type ChannelCredentials } from '@grpc/grpc-js';
import { tap } from '@minimesh/proto';
import type { TapCall, TapDialer } from './tap-service.js';

export function createGrpcDialer(
  opts: { port?: number; credentials?: ChannelCredentials; channelOptions?: Record<string, string | number> } = {},
): TapDialer {
  const port = opts.port ?? 4190;
  return (podIp, req) => {
    const host = podIp.includes(':') ? `[${podIp}]` : podIp;
    const client = new tap.TapClient(
      `${host}:${port}`,
      opts.credentials ?? grpcCredentials.createInsecure(),
      opts.channelOptions ?? {},
    );
    const call = client.observe(req);
    const close = () => client.close();
    call.on('end', close);
    call.on('error', close);
    return call as unknown as TapCall;
  };
}
