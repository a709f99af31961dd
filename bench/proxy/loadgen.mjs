// Load generator (its own process, so it does not share an event loop with what it measures).
//   open <ip> <port> <host> <rps> <seconds> <connections>: open loop at a fixed rate; latency measured from
//     the request's scheduled start (no coordinated omission); prints JSON {p50,p99,p999,sent,ok,errors,cpu,
//     maxPer100ms}: maxPer100ms[i] is the largest latency of the requests scheduled in the i-th 100 ms, to
//     show where in the run the tail sits.
//   closed <ip> <port> <host> <seconds> <connections>: saturated closed loop; prints JSON {rps,ok,errors,cpu}.
//   probe <ip> <port> <host> <path>: one GET; prints JSON {status,ms} (status 0: the request failed).
// <host> is the Host header (the service name); <ip> what the socket dials (a ClusterIP, a pod IP).
import { Agent, request } from 'node:http';

const [mode, ip, portText, host, ...rest] = process.argv.slice(2);
const port = Number(portText);

function once(agent) {
  return new Promise((resolve) => {
    const req = request({ host: ip, port, path: '/bench', headers: { host }, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200));
      res.on('error', () => resolve(false));
    });
    req.on('error', () => resolve(false));
    req.end();
  });
}

function pct(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

if (mode === 'probe') {
  const t0 = performance.now();
  const status = await new Promise((resolve) => {
    const req = request({ host: ip, port, path: rest[0] ?? '/', headers: { host } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
      res.on('error', () => resolve(0));
    });
    req.on('error', () => resolve(0));
    req.end();
  });
  process.stdout.write(JSON.stringify({ status, ms: performance.now() - t0 }) + '\n');
} else if (mode === 'open') {
  const [rps, seconds, conns] = rest.map(Number);
  const agent = new Agent({ keepAlive: true, maxSockets: conns, maxFreeSockets: conns });
  // Warm the connections.
  await Promise.all(Array.from({ length: conns }, () => once(agent)));
  const lat = [];
  let ok = 0,
    errors = 0,
    sent = 0;
  const total = rps * seconds;
  const start = performance.now();
  const inflight = [];
  // Where in the run the tail sits: the largest latency of the requests scheduled in each 100 ms.
  const BIN_MS = 100;
  const binMax = [];
  await new Promise((resolve) => {
    const tick = () => {
      const now = performance.now();
      const due = Math.min(total, Math.floor(((now - start) / 1000) * rps));
      while (sent < due) {
        const scheduled = start + (sent * 1000) / rps;
        sent++;
        inflight.push(
          once(agent).then((good) => {
            const ms = performance.now() - scheduled;
            lat.push(ms);
            const bin = Math.floor((scheduled - start) / BIN_MS);
            if (!(binMax[bin] >= ms)) binMax[bin] = ms;
            if (good) ok++;
            else errors++;
          }),
        );
      }
      if (sent >= total) resolve();
      else setTimeout(tick, 1);
    };
    tick();
  });
  await Promise.all(inflight);
  lat.sort((a, b) => a - b);
  const ru = process.resourceUsage();
  const cpu = (ru.userCPUTime + ru.systemCPUTime) / 1e6 / ((performance.now() - start) / 1000);
  process.stdout.write(
    JSON.stringify({
      p50: pct(lat, 50),
      p99: pct(lat, 99),
      p999: pct(lat, 99.9),
      sent,
      ok,
      errors,
      cpu,
      maxPer100ms: Array.from(binMax, (v) => Math.round((v ?? 0) * 10) / 10),
    }) + '\n',
  );
  agent.destroy();
} else {
  const [seconds, conns] = rest.map(Number);
  const agent = new Agent({ keepAlive: true, maxSockets: conns });
  await Promise.all(Array.from({ length: conns }, () => once(agent)));
  let ok = 0,
    errors = 0;
  const end = performance.now() + seconds * 1000;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: conns }, async () => {
      while (performance.now() < end) {
        if (await once(agent)) ok++;
        else errors++;
      }
    }),
  );
  const elapsed = (performance.now() - t0) / 1000;
  const ru = process.resourceUsage();
  // cpu: this generator's own CPU (cores) over the run, to tell whether it is the bottleneck.
  process.stdout.write(
    JSON.stringify({ rps: ok / elapsed, ok, errors, cpu: (ru.userCPUTime + ru.systemCPUTime) / 1e6 / elapsed }) + '\n',
  );
  agent.destroy();
}
