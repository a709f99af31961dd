// The bench's live tap reader: what the tap service does, from an unmeshed pod. One Observe call
// (io.linkerd.proxy.tap.Tap/Observe, every request, no headers: `minimesh viz tap`'s default) to each
// proxy's control port over mTLS with the tap service's certificate, consuming events as they come.
//   tap-reader.mjs <cert.pem> <key.pem> <anchors.pem> <ip:port=proxy identity>...
// Prints "observing <n>" once every call has its response headers (the proxy registered the tap), and
// on SIGTERM one JSON line {events, byTarget, errors, cpu}: events read, per proxy, and any call that
// failed. A call refused before every call started (e.g. PERMISSION_DENIED) ends it at once, exit 1.
import { readFileSync } from 'node:fs';
import { credentials } from '@grpc/grpc-js';
import { tap } from '@minimesh/proto';

const [certFile, keyFile, caFile, ...targets] = process.argv.slice(2);
if (!certFile || !keyFile || !caFile || targets.length === 0 || targets.some((t) => !/^[^=]+:\d+=.+$/.test(t))) {
  process.stderr.write('usage: tap-reader.mjs <cert.pem> <key.pem> <anchors.pem> <ip:port=proxy identity>...\n');
  process.exit(2);
}
const creds = credentials.createSsl(readFileSync(caFile), readFileSync(keyFile), readFileSync(certFile));
/** Linkerd's limit is a uint32: as many requests as the run can send. */
const LIMIT = 4_000_000_000;
const byTarget = {};
const errors = [];
const clients = [];
let started = 0;
const t0 = performance.now();
for (const t of targets) {
  const [addr, identity] = t.split('=');
  byTarget[addr] = 0;
  const client = new tap.TapClient(addr, creds, {
    'grpc.ssl_target_name_override': identity,
    'grpc.default_authority': identity,
  });
  clients.push(client);
  const call = client.observe({ limit: LIMIT });
  call.on('metadata', () => {
    if (++started === targets.length) process.stdout.write(`observing ${started}\n`);
  });
  call.on('data', () => byTarget[addr]++);
  call.on('error', (err) => {
    if (err.code === 1) return; // CANCELLED: ours, at exit
    const line = `${addr}: ${err.code} ${err.details}`;
    errors.push(line);
    process.stderr.write(`tap-reader: ${line}\n`);
    // Refused before it started (e.g. PERMISSION_DENIED): nothing to measure.
    if (started < targets.length) process.exit(1);
  });
  call.on('end', () => errors.push(`${addr}: the call ended before the bench stopped it`));
}
process.once('SIGTERM', () => {
  const ru = process.resourceUsage();
  const cpu = (ru.userCPUTime + ru.systemCPUTime) / 1e6 / ((performance.now() - t0) / 1000);
  const events = Object.values(byTarget).reduce((a, b) => a + b, 0);
  process.stdout.write(JSON.stringify({ events, byTarget, errors, cpu }) + '\n');
  for (const c of clients) c.close();
  process.exit(0);
});
