// The grpc-js server pieces every control-plane server shares (destination, policy): binding a
// listen address, and knowing when a server stream is over. Here because each of them serves the
// proxy API of this package, and grpc-js is already this package's dependency.
import { ServerCredentials, type Server, type ServerWritableStream } from '@grpc/grpc-js';

/**
 * Binds the server in plaintext on host:port (an IPv6 host is bracketed here; port 0 picks one) and
 * resolves with the bound port. Plaintext: the pod's own proxy terminates mTLS, as in Linkerd.
 * Rejects with grpc-js's error; the caller adds which flag it came from.
 */
export function bindGrpc(server: Server, host: string, port: number): Promise<number> {
  const bindHost = host.includes(':') ? `[${host}]` : host;
  return new Promise<number>((resolve, reject) =>
    server.bindAsync(`${bindHost}:${port}`, ServerCredentials.createInsecure(), (err, bound) =>
      err ? reject(err) : resolve(bound),
    ),
  );
}

/**
 * Runs `fn` once, when the stream is over for whatever reason: the client cancelled it, it closed, it
 * failed, or the server ended it. Returns the same once-only function, for the caller to end it early.
 */
export function onStreamEnd(call: ServerWritableStream<unknown, unknown>, fn: () => void): () => void {
  let done = false;
  const once = (): void => {
    if (done) return;
    done = true;
    fn();
  };
  call.on('cancelled', once);
  call.on('close', once);
  call.on('error', once);
  call.on('finish', once);
  return once;
}
