// A stand-in API server over TLS on 127.0.0.1 for the client's wire tests: HTTP/2 with HTTP/1.1
// fallback (as kube-apiserver), or HTTP/1.1 only. It counts the TLS connections it accepts, which is
// the figure the one-connection design is about.
import { createSecureServer, type Http2ServerRequest, type Http2ServerResponse } from 'node:http2';
import { createServer as createHttpsServer } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { makeTestCert } from '@minimesh/test-support/tls';

export interface TestPki {
  dir: string;
  cert: Buffer;
  key: Buffer;
}

/** A self-signed P-256 certificate for 127.0.0.1 (it is its own CA). */
export function makePki(): TestPki {
  const c = makeTestCert({ cn: '127.0.0.1' });
  return { dir: c.dir, cert: Buffer.from(c.cert), key: Buffer.from(c.key) };
}

export type Handler = (
  req: IncomingMessage | Http2ServerRequest,
  body: string,
  res: ServerResponse | Http2ServerResponse,
) => void;

export interface TestServer {
  url: string;
  /** TLS connections accepted so far. */
  connections: number;
  /** Authorization headers seen, in order. */
  authorizations: string[];
  close(): Promise<void>;
}

export async function startTestServer(
  pki: TestPki,
  handler: Handler,
  opts: { http1Only?: boolean } = {},
): Promise<TestServer> {
  const state = { connections: 0, authorizations: [] as string[] };
  const onRequest = (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse): void => {
    state.authorizations.push(String(req.headers.authorization ?? ''));
    let body = '';
    req.on('data', (d: Buffer) => (body += String(d)));
    req.on('end', () => handler(req, body, res));
  };
  const server = opts.http1Only
    ? createHttpsServer({ cert: pki.cert, key: pki.key }, onRequest)
    : createSecureServer({ cert: pki.cert, key: pki.key, allowHTTP1: true }, onRequest);
  server.on('secureConnection', () => state.connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return Object.assign(state, {
    url: `https://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        const s = server as unknown as { closeAllConnections?: () => void };
        s.closeAllConnections?.();
        server.close(() => resolve());
        setTimeout(resolve, 500).unref();
      }),
  });
}

export function json(
  res: ServerResponse | Http2ServerResponse,
  status: number,
  obj: unknown,
  headers: Record<string, string> = {},
): void {
  (res as ServerResponse).writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(obj));
}
