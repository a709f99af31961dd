// The smallest proxy Node can be for the bench's path, one side of a pair (floor.ts runs two):
//   outbound <port> <peer port> <cert> <key> <peer cert>: HTTP/1.1 in, each request a stream on one
//     HTTP/2 connection over mutual TLS to the inbound side;
//   inbound <port> <app port> <cert> <key> <peer cert>: that HTTP/2 server (client certificate required
//     and verified), each stream an HTTP/1.1 request on a keep-alive pool to the app.
// What minimesh-proxy does between the same ends, and nothing more: no discovery, policy, identity
// service, metrics, logging, retries or timeouts. Node's own http, http2 and tls, no library. It shows what
// memory a Node proxy cannot go below, whatever its code (docs/proxy.md, "The floor of a Node
// proxy"). Prints "port <n>" once it listens. 127.0.0.1 only.
import { Agent, createServer, request } from 'node:http';
import { connect, createSecureServer, constants } from 'node:http2';
import { readFileSync } from 'node:fs';

const [role, portText, nextText, certFile, keyFile, peerCertFile] = process.argv.slice(2);
if (!['outbound', 'inbound'].includes(role) || !peerCertFile) {
  process.stderr.write(
    'usage: floor-proxy.mjs outbound|inbound <port> <next port> <cert.pem> <key.pem> <peer cert.pem>\n',
  );
  process.exit(2);
}
const next = Number(nextText);
const tls = { cert: readFileSync(certFile), key: readFileSync(keyFile), ca: readFileSync(peerCertFile) };
/** Connection-specific headers (RFC 9113 §8.2.2), which HTTP/2 forbids and HTTP/1.1 hops do not forward. */
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'host', 'te']);
const { HTTP2_HEADER_STATUS: STATUS, HTTP2_HEADER_METHOD: METHOD, HTTP2_HEADER_PATH: PATH } = constants;
const AUTHORITY = constants.HTTP2_HEADER_AUTHORITY;

function copyHeaders(from, into) {
  for (const k in from) if (k[0] !== ':' && !HOP.has(k)) into[k] = from[k];
  return into;
}

let server;
if (role === 'outbound') {
  let session;
  const h2 = () => {
    if (session && !session.closed && !session.destroyed) return session;
    session = connect(`https://127.0.0.1:${next}`, { ...tls, servername: 'localhost' });
    session.on('error', () => {});
    return session;
  };
  server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    const up = h2().request(
      copyHeaders(req.headers, { [METHOD]: req.method, [PATH]: req.url, [AUTHORITY]: req.headers.host }),
    );
    up.on('response', (headers) => {
      res.writeHead(headers[STATUS], copyHeaders(headers, {}));
      up.pipe(res);
    });
    up.on('error', () => {
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
    req.pipe(up);
  });
} else {
  const agent = new Agent({ keepAlive: true });
  server = createSecureServer({ ...tls, requestCert: true, rejectUnauthorized: true });
  server.on('stream', (stream, headers) => {
    const down = request(
      {
        host: '127.0.0.1',
        port: next,
        method: headers[METHOD],
        path: headers[PATH],
        headers: copyHeaders(headers, { host: headers[AUTHORITY] }),
        agent,
      },
      (res) => {
        stream.respond(copyHeaders(res.headers, { [STATUS]: res.statusCode }));
        res.pipe(stream);
      },
    );
    down.on('error', () => {
      if (!stream.headersSent) stream.respond({ [STATUS]: 502 }, { endStream: true });
      else stream.close(constants.NGHTTP2_INTERNAL_ERROR);
    });
    stream.on('error', () => down.destroy());
    stream.pipe(down);
  });
}
server.on('error', (err) => {
  process.stderr.write(`floor-proxy ${role}: ${err.message}\n`);
  process.exit(1);
});
server.listen(Number(portText), '127.0.0.1', () => process.stdout.write(`port ${server.address().port}\n`));
process.on('SIGTERM', () => process.exit(0));
