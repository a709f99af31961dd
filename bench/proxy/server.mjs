// The benchmark's app: a node:http server answering a small body, on <host>:<port> (argv; default
// 127.0.0.1 and a free port), printing "port <n>" once it listens. GET /delay/<ms> answers after <ms>
// (the route variants' check that an HTTPRoute timeout is in force); GET /flaky/<key> answers 503 the
// first time it sees <key> and 200 after (the retry variant's check); every other path answers at once.
import { createServer } from 'node:http';
const body = Buffer.from('hello from the benchmark server\n');
const flaky = new Set();
const s = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  req.resume();
  req.on('end', () => {
    const answer = () => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': body.length });
      res.end(body);
    };
    if (req.url.startsWith('/delay/')) setTimeout(answer, Math.min(Number(req.url.slice(7)) || 0, 10_000));
    else if (req.url.startsWith('/flaky/') && !flaky.has(req.url)) {
      flaky.add(req.url);
      res.writeHead(503, { 'content-length': 0 });
      res.end();
    } else answer();
  });
});
const [host = '127.0.0.1', port = '0'] = process.argv.slice(2);
s.listen(Number(port), host, () => process.stdout.write(`port ${s.address().port}\n`));
