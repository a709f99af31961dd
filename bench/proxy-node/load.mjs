#!/usr/bin/env node
// Load for bench/proxy-node/memory.ts, run in an unmeshed pod (the http-client fixture image: Node, no
// dependencies, mounted from a ConfigMap). HTTP/1.1 keep-alive to one URL (a Service): kube-proxy picks a
// pod per connection, so a few keep-alive connections would load a few pods only. This script first dials
// connections until each of the `--pods` pods (told apart by the echo app's x-pod-name header) holds
// `--per-pod` of them (extra connections are closed), then sends `--rps` requests a second, open loop,
// round-robin over those connections, for `--seconds` seconds.
//   load.mjs <url> [--rps 200] [--seconds 60] [--pods 10] [--per-pod 2] [--max-dials 400]
// Prints JSON lines: {"connected":{<pod>:n},"dials":N,"ms":N}, then one a second
// {"t":<epoch ms>,"sent":N,"ok":N,"failed":N}, and at the end
// {"final":true,"sent":N,"ok":N,"failed":N,"perPod":{<pod>:n},"p50":ms,"p99":ms,"max":ms,"errors":{...}}.
import { Agent, request } from 'node:http';

const argv = process.argv.slice(2);
const flag = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : dflt;
};
const target = argv.find((a) => a.startsWith('http://'));
if (!target) {
  process.stderr.write('load.mjs: expected a URL (http://host:port/path)\n');
  process.exit(2);
}
const url = new URL(target);
const rps = Number(flag('--rps', '200'));
const seconds = Number(flag('--seconds', '60'));
const pods = Number(flag('--pods', '10'));
const perPod = Number(flag('--per-pod', '2'));
const maxDials = Number(flag('--max-dials', '400'));
const out = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);

/** One GET on `agent`; resolves with the answering pod's name and the time taken, or an error. */
function get(agent) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const req = request(url, { agent }, (res) => {
      res.on('data', () => undefined);
      res.on('end', () =>
        resolve({
          status: res.statusCode,
          pod: String(res.headers['x-pod-name'] ?? '?'),
          ms: performance.now() - t0,
        }),
      );
      res.on('error', (err) => resolve({ error: `response: ${err.message}`, ms: performance.now() - t0 }));
    });
    req.setTimeout(10_000, () => req.destroy(new Error('no answer in 10 s')));
    req.on('error', (err) => resolve({ error: err.message, ms: performance.now() - t0 }));
    req.end();
  });
}

// 1. Connections: one Agent of one keep-alive socket each, kept when its pod needs one more.
const kept = [];
const perPodConns = new Map();
let dials = 0;
const c0 = Date.now();
while (dials < maxDials && (perPodConns.size < pods || [...perPodConns.values()].some((n) => n < perPod))) {
  dials++;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const r = await get(agent);
  const n = perPodConns.get(r.pod) ?? 0;
  if (r.status === 200 && n < perPod) {
    perPodConns.set(r.pod, n + 1);
    kept.push(agent);
  } else agent.destroy();
}
out({ connected: Object.fromEntries(perPodConns), dials, ms: Date.now() - c0 });
if (kept.length === 0) {
  out({ final: true, sent: 0, ok: 0, failed: 0, error: 'no connection answered' });
  process.exit(1);
}

// 2. Open loop: every 5 ms send what is due since the start, round-robin over the kept connections.
let sent = 0;
let ok = 0;
let failed = 0;
const lat = [];
const perPodReqs = {};
const errors = {};
const start = Date.now();
const end = start + seconds * 1000;
let pending = 0;
const once = (agent) => {
  pending++;
  void get(agent).then((r) => {
    pending--;
    lat.push(r.ms);
    if (r.status === 200) {
      ok++;
      perPodReqs[r.pod] = (perPodReqs[r.pod] ?? 0) + 1;
    } else {
      failed++;
      const k = r.error ?? `status ${r.status}`;
      errors[k] = (errors[k] ?? 0) + 1;
    }
  });
};
const tick = setInterval(() => {
  const now = Math.min(Date.now(), end);
  const due = Math.floor(((now - start) * rps) / 1000);
  while (sent < due) once(kept[sent++ % kept.length]);
  if (Date.now() >= end) {
    clearInterval(tick);
    const wait = setInterval(() => {
      if (pending > 0 && Date.now() < end + 15_000) return;
      clearInterval(wait);
      clearInterval(report);
      lat.sort((a, b) => a - b);
      const q = (p) => Math.round((lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] ?? NaN) * 100) / 100;
      out({ final: true, sent, ok, failed, perPod: perPodReqs, p50: q(0.5), p99: q(0.99), max: q(1), errors });
      for (const a of kept) a.destroy();
      process.exit(0);
    }, 50);
  }
}, 5);
const report = setInterval(() => out({ t: Date.now(), sent, ok, failed }), 1000);
