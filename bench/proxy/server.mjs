// The benchmark's app: a node:http server answering a small body, on 127.0.0.1:<port printed>.
import { createServer } from 'node:http';
const body = Buffer.from('hello from the benchmark server\n');
const s = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': body.length });
    res.end(body);
  });
});
s.listen(0, '127.0.0.1', () => process.stdout.write(`port ${s.address().port}\n`));
