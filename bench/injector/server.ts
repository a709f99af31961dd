// The webhook under test, in its own process so the load generator does not share its event loop.
// Records fastify's server-side elapsed time per request; the parent asks for percentiles over IPC.
import { Writable } from 'node:stream';
import { parseMeshConfig } from '@minimesh/config';
import { createWebhookMetrics, createWebhookServer } from '@minimesh/injector';
import { createLogger, createRegistry } from '@minimesh/runtime';

const [certFile = '', keyFile = '', anchorsPem = ''] = process.argv.slice(2);
const logger = createLogger({
  name: 'bench',
  level: 'silent',
  destination: new Writable({ write: (_c, _e, cb) => cb() }),
});
const config = parseMeshConfig({ identityTrustAnchorsPEM: anchorsPem });
const server = await createWebhookServer({
  certFile,
  keyFile,
  config: () => config,
  namespaceAnnotations: () => ({}),
  logger,
  metrics: createWebhookMetrics(createRegistry()),
});
let samples: number[] = [];
server.app.addHook('onResponse', async (_req, reply) => {
  samples.push(reply.elapsedTime);
});
const port = await server.listen('127.0.0.1', 0);
process.send?.({ type: 'listening', port });
process.on('message', (msg: { type: string }) => {
  if (msg.type === 'stats') {
    const s = samples.sort((a, b) => a - b);
    samples = [];
    process.send?.({ type: 'stats', samples: s });
  } else if (msg.type === 'stop') {
    void server.close().then(() => process.exit(0));
  }
});
