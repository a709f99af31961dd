// Small app servers for proxy tests: HTTP/1 echo, HTTP/2 echo, a gRPC-framed echo, WebSocket-ish upgrade
// echo, a server-speaks-first banner server and a TCP echo.
import { createServer as createH1, type Server as H1Server } from 'node:http';
import { createServer as createH2, type Http2Server } from 'node:http2';
import { createServer as createTcp, type Server as TcpServer } from 'node:net';

export function listen(server: H1Server | Http2Server | TcpServer, host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve) => server.listen(0, host, () => resolve((server.address() as { port: number }).port)));
}

/** Answers JSON { app, method, url, headers, body } with status from ?status=. */
export function h1Echo(name: string): H1Server {
  const s = createH1((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const status = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('status') ?? 200);
      res.writeHead(status, { 'content-type': 'application/json', 'x-app': name });
      res.end(
        JSON.stringify({
          app: name,
          method: req.method,
          url: req.url,
          headers: req.headers,
          body: Buffer.concat(chunks).toString(),
          httpVersion: req.httpVersion,
        }),
      );
    });
  });
  s.on('upgrade', (req, socket) => {
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nupgrade: ${req.headers.upgrade}\r\nconnection: Upgrade\r\nx-app: ${name}\r\n\r\n`,
    );
    socket.on('data', (d: Buffer) => socket.write(Buffer.concat([Buffer.from('echo:'), d])));
  });
  return s;
}

/** HTTP/2 echo; gRPC-style requests (content-type application/grpc) get the body back with trailers. */
export function h2Echo(name: string): Http2Server {
  const s = createH2();
  s.on('stream', (stream, headers) => {
    const grpc = String(headers['content-type'] ?? '').startsWith('application/grpc');
    const chunks: Buffer[] = [];
    if (grpc && headers[':path'] === '/test.Echo/Fail') {
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': 7, 'grpc-message': 'denied' },
        { endStream: true },
      );
      return;
    }
    if (grpc && headers[':path'] === '/test.Echo/Stream') {
      // Server streaming: answer each received message at once, then trailers.
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'x-app': name }, { waitForTrailers: true });
      stream.on('data', (c: Buffer) => stream.write(c));
      stream.on('end', () => stream.end());
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': 0, 'x-trailer': name }));
      return;
    }
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      const body = Buffer.concat(chunks);
      if (grpc) {
        stream.respond(
          { ':status': 200, 'content-type': 'application/grpc', 'x-app': name },
          { waitForTrailers: true },
        );
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': 0, 'x-trailer': name }));
        stream.end(body);
      } else {
        stream.respond({ ':status': 200, 'content-type': 'application/json', 'x-app': name });
        stream.end(JSON.stringify({ app: name, path: headers[':path'], headers, body: body.toString() }));
      }
    });
  });
  return s;
}

/** Speaks first: writes a banner on connect, then echoes. */
export function bannerServer(banner: string): TcpServer {
  return createTcp((s) => {
    s.write(banner);
    s.on('data', (d) => s.write(d));
    s.on('error', () => undefined);
  });
}

export function tcpEcho(): TcpServer {
  return createTcp((s) => {
    s.on('data', (d) => s.write(d));
    s.on('error', () => undefined);
  });
}

/** gRPC length-prefixed message framing. */
export function grpcFrame(payload: Buffer): Buffer {
  const h = Buffer.alloc(5);
  h.writeUInt32BE(payload.length, 1);
  return Buffer.concat([h, payload]);
}

/**
 * An HTTP/1 app that answers the first request on each connection with keep-alive, then closes the
 * connection when the next request arrives, without answering it: the keep-alive race a pooled
 * connection meets when the app closes idle connections (a graceful shutdown) just as it is reused.
 */
export function oneRequestPerConnection(): TcpServer & { connections: number; dropped: string[] } {
  const server = createTcp((socket) => {
    server.connections++;
    let buffered = '';
    let answered = false;
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('latin1');
      if (answered) {
        server.dropped.push(buffered.split('\r\n')[0] ?? '');
        socket.destroy();
        return;
      }
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) return;
      answered = true;
      const line = buffered.slice(0, buffered.indexOf('\r\n'));
      buffered = '';
      const body = JSON.stringify({ line, connection: server.connections });
      socket.write(
        `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: keep-alive\r\n\r\n${body}`,
      );
    });
    socket.on('error', () => undefined);
  }) as TcpServer & { connections: number; dropped: string[] };
  server.connections = 0;
  server.dropped = [];
  return server;
}
