#!/usr/bin/env node
// e2e client for the grpc-echo fixture (minimesh.test.Echo in e2e/fixtures/echo.proto): calls Echo and
// prints one JSON line per answer: { n, ok, pod, ms } or { n, error }.
//   grpc-client.mjs <host:port> [--count N] [--interval-ms MS] [--forever]
// As a pod's container it loops forever (--forever); exit 0 when every call succeeded otherwise.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const argv = process.argv.slice(2);
const flag = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : dflt;
};
const VALUED = new Set(['--count', '--interval-ms']);
const positionals = argv.filter((a, i) => !a.startsWith('--') && !VALUED.has(argv[i - 1] ?? ''));
const target = positionals[0] ?? process.env.TARGET ?? '127.0.0.1:9090';
const count = Number(flag('--count', process.env.COUNT ?? 1));
const interval = Number(flag('--interval-ms', process.env.INTERVAL_MS ?? 1000));
const forever = argv.includes('--forever');

const here = dirname(fileURLToPath(import.meta.url));
const protoPath = [join(here, '..', 'fixtures', 'echo.proto'), join(here, 'echo.proto')].find((p) => {
  try {
    return protoLoader.loadSync(p) !== undefined;
  } catch {
    return false;
  }
});
const def = protoLoader.loadSync(protoPath, { keepCase: true, defaults: true });
const proto = grpc.loadPackageDefinition(def);
const client = new proto.minimesh.test.Echo(target, grpc.credentials.createInsecure());

function once(n) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    client.Echo({ message: `hello ${n}` }, { deadline: Date.now() + 5000 }, (err, res) => {
      if (err) resolve({ n, error: `${err.code} ${err.details || err.message}` });
      else resolve({ n, ok: res.message === `hello ${n}`, pod: res.pod, ms: Date.now() - t0 });
    });
  });
}

let failures = 0;
for (let n = 1; forever || n <= count; n++) {
  const r = await once(n);
  if (r.error || !r.ok) failures++;
  process.stdout.write(`${JSON.stringify(r)}\n`);
  if (forever || n < count) await new Promise((res) => setTimeout(res, interval));
}
client.close();
process.exit(failures === 0 ? 0 : 1);
