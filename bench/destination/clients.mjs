// The benchmark's clients, in a worker thread (their own event loop, as proxies are other processes):
// opens the Get streams, reports when every stream has its first message, then for every round the
// time at which each stream received the add of the new endpoint.
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { credentials } from '@grpc/grpc-js';
import { destination } from '@minimesh/proto';

const { port, path, streams, connections } = workerData;
const now = () => performance.timeOrigin + performance.now();
const clients = Array.from(
  { length: connections },
  (_, i) =>
    new destination.DestinationClient(`127.0.0.1:${port}`, credentials.createInsecure(), {
      'grpc.use_local_subchannel_pool': 1,
      'bench.connection': i,
    }),
);
let first = 0;
let times = [];
for (let i = 0; i < streams; i++) {
  const call = clients[i % connections].get({ scheme: '', path, contextToken: '' });
  let seen = false;
  call.on('data', (u) => {
    if (!seen) {
      seen = true;
      if (++first === streams) parentPort.postMessage({ ready: true });
      return;
    }
    if (u.update?.$case !== 'add') return;
    times.push(now());
    if (times.length === streams) {
      parentPort.postMessage({ times });
      times = [];
    }
  });
  call.on('error', (e) => {
    if (e.code !== 1) throw e;
  });
}
parentPort.on('message', (m) => {
  if (m.stop) process.exit(0);
});
