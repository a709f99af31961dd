// The destination bench's clients, in their own process (as proxies are): Get streams spread over a
// few gRPC connections. Driven over IPC:
//   { cmd: 'open', port, path, contextToken, streams, connections } → { ready: n } once every stream has its snapshot
//   { cmd: 'expect', ip }                               → { armed }, then { times } when every stream got the add of ip
//   { cmd: 'close' }                                    → { closed: true } after cancelling the streams
import { credentials } from '@grpc/grpc-js';
import { destination, fromTcpAddress } from '@minimesh/proto';

const now = () => performance.timeOrigin + performance.now();
let clients = [];
let calls = [];
let waiting; // { ip, times, seen: Set<number> }

function open(m) {
  clients = Array.from(
    { length: m.connections },
    (_, i) =>
      new destination.DestinationClient(`127.0.0.1:${m.port}`, credentials.createInsecure(), {
        'grpc.use_local_subchannel_pool': 1,
        'bench.connection': i,
      }),
  );
  let ready = 0;
  calls = [];
  for (let i = 0; i < m.streams; i++) {
    const call = clients[i % m.connections].get({ scheme: 'k8s', path: m.path, contextToken: m.contextToken ?? '' });
    let first = true;
    call.on('data', (u) => {
      if (first) {
        first = false;
        if (++ready === m.streams) process.send({ ready });
      }
      if (!waiting || u.update?.$case !== 'add') return;
      if (waiting.seen.has(i)) return;
      if (u.update.value.addrs.some((a) => fromTcpAddress(a.addr)?.ip === waiting.ip)) {
        waiting.seen.add(i);
        waiting.times.push(now());
        if (waiting.times.length === m.streams) {
          process.send({ times: waiting.times });
          waiting = undefined;
        }
      }
    });
    call.on('error', (e) => {
      if (e.code !== 1) process.send({ error: e.message });
    });
    calls.push(call);
  }
}

process.on('message', (m) => {
  if (m.cmd === 'open') open(m);
  if (m.cmd === 'expect') {
    waiting = { ip: m.ip, times: [], seen: new Set() };
    process.send({ armed: true });
  }
  if (m.cmd === 'close') {
    for (const c of calls) c.cancel();
    for (const c of clients) c.close();
    calls = [];
    clients = [];
    process.send({ closed: true });
  }
  if (m.cmd === 'exit') process.exit(0);
});
process.send({ started: true });
