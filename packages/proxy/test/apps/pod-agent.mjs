// Runs inside a test pod's network namespace (ip netns exec ...).
//   server <name> [status]: HTTP/1 echo + Upgrade echo on 8080 (answering `status`, default 200: a
//                  failing endpoint for failure accrual), HTTP/2 + gRPC-framed echo on 8081,
//                  a server-speaks-first banner on 25, a TCP echo on 9000. On 8080, a path holding
//                  /delay/<ms> answers after that long, one holding /fail/<n>/<key> answers 503 to the
//                  first n requests for that key (the JSON's `attempt` counts them), and an Upgrade to
//                  /websocket is a real WebSocket (the `ws` package): it greets with what it saw of the
//                  handshake, sends `srv:1`, echoes text as `echo:<text>` (`back:<x>` as `got:back:<x>`)
//                  and binary unchanged. Other Upgrades get the raw `echo:` tunnel.
//   impostor <certfile> <keyfile>: a TLS server on 8443 presenting the given certificate.
//   client <unix socket>: a control API over a unix socket (reachable from the host across namespaces)
//                  that makes requests from inside the pod: POST /h1 /h2 /ws /websocket /tcp /tls /fetch with
//                  JSON bodies.
import { createServer as h1Server, request as h1Request, Agent } from 'node:http';
import { createServer as h2Server, connect as h2Connect } from 'node:http2';
import { createServer as tcpServer, connect as tcpConnect } from 'node:net';
import { createServer as tlsServer, connect as tlsConnect } from 'node:tls';
import { readFileSync, chmodSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { WebSocket, WebSocketServer } from 'ws';

const [mode, ...args] = process.argv.slice(2);

if (mode === 'server') {
  const name = args[0];
  const status = Number(args[1] ?? 200);
  /** Requests seen per /fail/<n>/<key> key. */
  const attempts = new Map();
  const h1 = h1Server((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const url = req.url ?? '/';
      const fail = /\/fail\/(\d+)\/([^/?]+)/.exec(url);
      const attempt = fail ? (attempts.get(fail[2]) ?? 0) + 1 : undefined;
      if (fail) attempts.set(fail[2], attempt);
      const code = fail && attempt <= Number(fail[1]) ? 503 : status;
      const delay = Number(/\/delay\/(\d+)/.exec(url)?.[1] ?? 0);
      const answer = () => {
        res.writeHead(code, {
          'content-type': 'application/json',
          'x-app': name,
          ...(attempt ? { 'x-attempt': String(attempt) } : {}),
        });
        res.end(
          JSON.stringify({
            app: name,
            url,
            headers: req.headers,
            httpVersion: req.httpVersion,
            body: Buffer.concat(chunks).toString(),
            ...(attempt ? { attempt } : {}),
          }),
        );
      };
      if (delay > 0) setTimeout(answer, delay);
      else answer();
    });
  });
  const wss = new WebSocketServer({ noServer: true });
  wss.on('headers', (headers) => headers.push(`x-app: ${name}`));
  h1.on('upgrade', (req, socket, head) => {
    if ((req.url ?? '').startsWith('/websocket')) {
      socket.on('error', () => {});
      wss.handleUpgrade(req, socket, head, (ws) => {
        ws.on('error', () => {});
        ws.send(JSON.stringify({ hello: name, url: req.url, headers: req.headers, httpVersion: req.httpVersion }));
        ws.send('srv:1');
        ws.on('message', (data, isBinary) => {
          if (isBinary) return ws.send(data, { binary: true });
          const text = data.toString();
          ws.send(text.startsWith('back:') ? `got:${text}` : `echo:${text}`);
        });
      });
      return;
    }
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nupgrade: ${req.headers.upgrade}\r\nconnection: Upgrade\r\nx-app: ${name}\r\n\r\n`,
    );
    socket.on('data', (d) => socket.write(Buffer.concat([Buffer.from('echo:'), d])));
    socket.on('error', () => {});
  });
  h1.listen(8080, '0.0.0.0');
  const h2 = h2Server();
  h2.on('stream', (stream, headers) => {
    const grpc = String(headers['content-type'] ?? '').startsWith('application/grpc');
    if (grpc && headers[':path'] === '/test.Echo/Stream') {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'x-app': name }, { waitForTrailers: true });
      stream.on('data', (c) => stream.write(c));
      stream.on('end', () => stream.end());
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': 0, 'x-app': name }));
      return;
    }
    const chunks = [];
    stream.on('data', (c) => chunks.push(c));
    stream.on('end', () => {
      if (grpc) {
        stream.respond(
          { ':status': 200, 'content-type': 'application/grpc', 'x-app': name },
          { waitForTrailers: true },
        );
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': 0, 'x-app': name }));
        stream.end(Buffer.concat(chunks));
      } else {
        stream.respond({ ':status': 200, 'content-type': 'application/json', 'x-app': name });
        stream.end(JSON.stringify({ app: name, headers }));
      }
    });
  });
  h2.listen(8081, '0.0.0.0');
  tcpServer((s) => {
    s.write(`220 ${name} ready\r\n`);
    s.on('data', (d) => s.write(d));
    s.on('error', () => {});
  }).listen(25, '0.0.0.0');
  tcpServer((s) => {
    s.on('data', (d) => s.write(d));
    s.on('error', () => {});
  }).listen(9000, '0.0.0.0');
  process.stdout.write('listening\n');
} else if (mode === 'impostor') {
  const s = tlsServer({ cert: readFileSync(args[0]), key: readFileSync(args[1]), ALPNProtocols: ['h2'] }, (t) =>
    t.destroy(),
  );
  s.listen(8443, '0.0.0.0', () => process.stdout.write('listening\n'));
} else if (mode === 'client') {
  const agents = new Map();
  const agentFor = (key) => {
    if (!agents.has(key)) agents.set(key, new Agent({ keepAlive: true, maxSockets: 8 }));
    return agents.get(key);
  };
  // One HTTP/1.1 request; `ms`: from sending it to the end of the answer.
  const h1once = ({ ip, port, host, path = '/', agentKey, timeoutMs = 5000 }) =>
    new Promise((resolve) => {
      const t0 = performance.now();
      const req = h1Request(
        { host: ip, port, path, headers: { host }, agent: agentKey ? agentFor(agentKey) : false, timeout: timeoutMs },
        (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () =>
            resolve({ status: res.statusCode, headers: res.headers, body, ms: performance.now() - t0 }),
          );
        },
      );
      req.on('error', (e) => resolve({ status: 0, error: e.message }));
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.end();
    });
  const handlers = {
    async h1(o) {
      const out = [];
      const n = o.n ?? 1;
      const par = o.parallel ?? 1;
      for (let i = 0; i < n; i += par)
        out.push(...(await Promise.all(Array.from({ length: Math.min(par, n - i) }, () => h1once(o)))));
      return out;
    },
    h2(o) {
      return new Promise((resolve) => {
        const s = h2Connect(`http://${o.ip}:${o.port}`);
        s.on('error', (e) => resolve({ error: e.message }));
        const r = s.request({
          ':method': o.grpc ? 'POST' : 'GET',
          ':path': o.path ?? '/',
          ':authority': o.authority,
          ...(o.grpc ? { 'content-type': 'application/grpc', te: 'trailers' } : {}),
        });
        const chunks = [];
        let headers = {};
        let trailers = {};
        r.on('response', (h) => (headers = h));
        r.on('trailers', (t) => (trailers = t));
        r.on('data', (c) => chunks.push(c));
        r.on('end', () => {
          s.close();
          resolve({ headers, trailers, body: Buffer.concat(chunks).toString('latin1') });
        });
        r.on('error', (e) => resolve({ error: e.message }));
        for (const m of o.messages ?? []) {
          const b = Buffer.from(m);
          const h = Buffer.alloc(5);
          h.writeUInt32BE(b.length, 1);
          r.write(Buffer.concat([h, b]));
        }
        r.end();
      });
    },
    ws(o) {
      return new Promise((resolve) => {
        const sock = tcpConnect(o.port, o.ip);
        let buf = '';
        const t = setTimeout(() => resolve({ error: 'timeout', buf }), 5000);
        sock.on('data', (d) => {
          buf += d.toString();
          if (buf.includes('\r\n\r\n') && !buf.includes('echo:') && !sock.sent) {
            sock.sent = true;
            sock.write('frame-1');
          }
          if (buf.includes('echo:frame-1')) {
            clearTimeout(t);
            sock.destroy();
            resolve({ buf });
          }
        });
        sock.on('error', (e) => resolve({ error: e.message }));
        sock.write(`GET /ws HTTP/1.1\r\nhost: ${o.host}\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\r\n`);
      });
    },
    // A WebSocket client (the `ws` package) to ws://ip:port/websocket with the Host `host`: the handshake's
    // status and headers, every text message received (answering the server's `srv:*` with `back:srv:*`),
    // `messages` text messages and one binary message of `binaryBytes` random bytes sent, whether that
    // came back unchanged, and the close code once the client closed (1000) after everything was back.
    websocket(o) {
      return new Promise((resolve) => {
        const n = o.messages ?? 3;
        const big = randomBytes(o.binaryBytes ?? 65536);
        const out = { messages: [], binaryBytes: 0, binaryOk: false };
        const ws = new WebSocket(`ws://${o.ip}:${o.port}${o.path ?? '/websocket'}`, {
          headers: { host: o.host },
          handshakeTimeout: 5000,
        });
        const t = setTimeout(() => {
          ws.terminate();
          resolve({ ...out, error: 'timeout' });
        }, o.timeoutMs ?? 10000);
        const done = () =>
          out.binaryBytes > 0 &&
          out.messages.some((m) => m.startsWith('{')) &&
          out.messages.filter((m) => m.startsWith('echo:')).length === n &&
          out.messages.some((m) => m.startsWith('got:'));
        ws.on('upgrade', (res) => {
          out.status = res.statusCode;
          out.headers = res.headers;
        });
        ws.on('unexpected-response', (_req, res) => {
          clearTimeout(t);
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () =>
            resolve({ status: res.statusCode, headers: res.headers, body, error: 'unexpected response' }),
          );
        });
        ws.on('error', (e) => {
          clearTimeout(t);
          resolve({ ...out, error: e.message });
        });
        ws.on('open', () => {
          for (let i = 1; i <= n; i++) ws.send(`cli:${i}`);
          ws.send(big);
        });
        ws.on('message', (data, isBinary) => {
          if (isBinary) {
            out.binaryBytes = data.length;
            out.binaryOk = Buffer.compare(data, big) === 0;
          } else {
            const text = data.toString();
            out.messages.push(text);
            if (text.startsWith('srv:')) ws.send(`back:${text}`);
          }
          if (done()) ws.close(1000, 'done');
        });
        ws.on('close', (code, reason) => {
          clearTimeout(t);
          resolve({ ...out, closeCode: code, closeReason: reason.toString() });
        });
      });
    },
    tcp(o) {
      return new Promise((resolve) => {
        const t0 = performance.now();
        const sock = tcpConnect(o.port, o.ip);
        let buf = '';
        let first;
        const t = setTimeout(() => resolve({ error: 'timeout', buf }), o.timeoutMs ?? 15000);
        sock.on('connect', () => {
          if (o.send) sock.write(o.send);
        });
        sock.on('data', (d) => {
          first ??= performance.now() - t0;
          buf += d.toString();
          if (buf.length >= (o.expectBytes ?? 1)) {
            clearTimeout(t);
            sock.destroy();
            resolve({ buf, firstByteMs: first });
          }
        });
        sock.on('error', (e) => {
          clearTimeout(t);
          resolve({ error: e.message, code: e.code });
        });
      });
    },
    // A TLS client (the server's certificate is not checked) for `servername`: what the server sent
    // before it closed, or how the connection failed.
    tls(o) {
      return new Promise((resolve) => {
        const sock = tlsConnect({ host: o.ip, port: o.port, servername: o.servername, rejectUnauthorized: false });
        let buf = '';
        const t = setTimeout(() => (sock.destroy(), resolve({ error: 'timeout', buf })), o.timeoutMs ?? 8000);
        sock.on('data', (d) => (buf += d.toString()));
        sock.on('end', () => {
          clearTimeout(t);
          resolve({ buf, handshake: true });
        });
        sock.on('error', (e) => {
          clearTimeout(t);
          resolve({ error: e.message, code: e.code, buf });
        });
      });
    },
    async fetch(o) {
      const r = await fetch(o.url, { method: o.method ?? 'GET' });
      return { status: r.status, body: await r.text() };
    },
  };
  const control = h1Server((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', async () => {
      const h = handlers[(req.url ?? '').slice(1)];
      try {
        const out = h ? await h(JSON.parse(body || '{}')) : { error: 'no such handler' };
        res.end(JSON.stringify(out));
      } catch (e) {
        res.end(JSON.stringify({ error: String(e) }));
      }
    });
  });
  control.listen(args[0], () => {
    chmodSync(args[0], 0o777);
    process.stdout.write('listening\n');
  });
}
