// The identity bench's load generator, in its own process (as proxies are): N gRPC clients, each with
// its own identity, service-account token and CSR, calling Certify in a closed loop. Driven over IPC:
//   { cmd: 'first', port }                      → { ms } once one Certify succeeded (polled from fork time)
//   { cmd: 'run', port, callers, seconds }      → { count, errors, latencies }
import { generateKeyPairSync, sign } from 'node:crypto';
import { credentials } from '@grpc/grpc-js';
import { der, identity } from '@minimesh/proto';

const { seq, tlv, encodeOid } = der;
let clients = [];

/** A PKCS#10 CSR for one identity (CN and the one DNS SAN), ECDSA P-256, as a proxy makes it. */
function csr(id) {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const subject = seq(tlv(0x31, seq(encodeOid('2.5.4.3'), tlv(0x0c, Buffer.from(id)))));
  const extensions = seq(seq(encodeOid('2.5.29.17'), tlv(0x04, seq(tlv(0x82, Buffer.from(id))))));
  const info = seq(
    tlv(0x02, Buffer.from([0])),
    subject,
    spki,
    tlv(0xa0, seq(encodeOid('1.2.840.113549.1.9.14'), tlv(0x31, extensions))),
  );
  const signature = tlv(0x03, Buffer.concat([Buffer.from([0]), sign('sha256', info, privateKey)]));
  return seq(info, seq(encodeOid('1.2.840.10045.4.3.2')), signature);
}

function connect(port, callers) {
  for (const c of clients) c.client.close();
  clients = callers.map((c) => ({
    ...c,
    csr: csr(c.identity),
    client: new identity.IdentityClient(`127.0.0.1:${port}`, credentials.createInsecure(), {
      'grpc.use_local_subchannel_pool': 1,
      // a server that is still starting: retry quickly instead of grpc-js's 1 s reconnect backoff
      'grpc.initial_reconnect_backoff_ms': 5,
      'grpc.min_reconnect_backoff_ms': 5,
      'grpc.max_reconnect_backoff_ms': 20,
    }),
  }));
}

const certify = (c) =>
  new Promise((resolve, reject) =>
    c.client.certify(
      { identity: c.identity, token: Buffer.from(c.token), certificateSigningRequest: c.csr },
      { deadline: Date.now() + 10_000 },
      (err, res) => (err ? reject(err) : resolve(res)),
    ),
  );

process.on('message', async (m) => {
  if (m.cmd === 'first') {
    connect(m.port, m.callers.slice(0, 1));
    const t0 = m.since;
    for (;;) {
      try {
        await certify(clients[0]);
        process.send({ ms: performance.timeOrigin + performance.now() - t0 });
        return;
      } catch {
        if (performance.timeOrigin + performance.now() - t0 > 60_000) return process.send({ ms: NaN });
        await new Promise((r) => setTimeout(r, 2));
      }
    }
  }
  if (m.cmd === 'run') {
    connect(m.port, m.callers);
    await Promise.all(clients.map((c) => certify(c).catch(() => undefined))); // warm the channels
    const latencies = [];
    let count = 0;
    let errors = 0;
    const end = performance.now() + m.seconds * 1000;
    await Promise.all(
      clients.map(async (c) => {
        while (performance.now() < end) {
          const t = performance.now();
          try {
            await certify(c);
            latencies.push(performance.now() - t);
            count++;
          } catch {
            errors++;
          }
        }
      }),
    );
    process.send({ count, errors, latencies });
  }
  if (m.cmd === 'exit') {
    for (const c of clients) c.client.close();
    process.exit(0);
  }
});
process.send({ ready: true });
