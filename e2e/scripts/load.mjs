#!/usr/bin/env node
// Load generator for the fault specs (e2e/specs/faults.test.ts): sends HTTP/1.1 requests to one URL at
// a steady rate (open loop: a slow answer does not slow the sending down) and counts every one.
//   load.mjs <url> [--rps 200] [--timeout-ms 10000]
// Prints one JSON line a second with cumulative counts and the slowest answer of that second:
//   {"t":<epoch ms>,"sent":N,"ok":N,"failed":N,"inflight":N,"maxMs":N}
// and one line per failed request, with when it was sent and when it failed:
//   {"fail":{"n":N,"sent":<epoch ms>,"at":<epoch ms>,"error":"..."|"status":502,"proxyError":"..."}}
// On SIGTERM (a rollout replacing the pod) it stops sending, waits for the requests in flight, prints a
// last line with "final":true and exits 0. It runs in the http-client fixture image (Node, no deps).
import { Agent, request } from 'node:http';

const argv = process.argv.slice(2);
const flag = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : dflt;
};
const target = argv.find((a) => a.startsWith('http://'));
if (!target) {
  process.stderr.write('load.mjs: expected a URL (http://host:port/path) as an argument\n');
  process.exit(2);
}
const url = new URL(target);
const rps = Number(flag('--rps', '200'));
const timeoutMs = Number(flag('--timeout-ms', '10000'));
if (!(rps > 0 && rps <= 5000) || !(timeoutMs > 0)) {
  process.stderr.write(`load.mjs: --rps must be in (0, 5000] and --timeout-ms > 0 (got ${rps}, ${timeoutMs})\n`);
  process.exit(2);
}

const agent = new Agent({ keepAlive: true, maxSockets: 256 });
let sent = 0;
let ok = 0;
let failed = 0;
let inflight = 0;
let maxMs = 0;
let stopping = false;

function fail(n, t0, what) {
  failed++;
  process.stdout.write(`${JSON.stringify({ fail: { n, sent: t0, at: Date.now(), ...what } })}\n`);
}

function once(n) {
  const t0 = Date.now();
  inflight++;
  let done = false;
  const finish = (what) => {
    if (done) return;
    done = true;
    inflight--;
    const ms = Date.now() - t0;
    if (ms > maxMs) maxMs = ms;
    if (what === undefined) ok++;
    else fail(n, t0, what);
  };
  const req = request(url, { agent, headers: { 'x-load-n': String(n) } }, (res) => {
    res.on('data', () => undefined);
    res.on('end', () =>
      finish(
        res.statusCode >= 200 && res.statusCode < 400
          ? undefined
          : { status: res.statusCode, proxyError: res.headers['x-minimesh-proxy-error'] },
      ),
    );
    res.on('error', (err) => finish({ error: `response: ${err.message}` }));
  });
  const timer = setTimeout(() => req.destroy(new Error(`no answer in ${timeoutMs} ms`)), timeoutMs);
  req.on('close', () => clearTimeout(timer));
  req.on('error', (err) => finish({ error: err.message }));
  req.end();
}

const line = (extra = {}) => `${JSON.stringify({ t: Date.now(), sent, ok, failed, inflight, maxMs, ...extra })}\n`;

// Open loop: every 5 ms send what is due since the start, so the rate holds whatever the latency.
const start = Date.now();
const tick = setInterval(() => {
  const due = Math.floor(((Date.now() - start) * rps) / 1000);
  while (sent < due) once(sent++);
}, 5);
const report = setInterval(() => {
  process.stdout.write(line());
  maxMs = 0;
}, 1000);

process.on('SIGTERM', () => {
  if (stopping) return;
  stopping = true;
  clearInterval(tick);
  const wait = setInterval(() => {
    if (inflight > 0) return;
    clearInterval(wait);
    clearInterval(report);
    process.stdout.write(line({ final: true }), () => process.exit(0));
  }, 20);
});
process.stdout.write(`${JSON.stringify({ start, url: url.href, rps, timeoutMs })}\n`);
