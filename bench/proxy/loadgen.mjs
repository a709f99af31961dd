// Load generator (its own process, so it does not share an event loop with what it measures).
//   open <ip> <port> <host> <rps> <seconds> <connections> [<warm-up seconds>]: open loop at a fixed rate;
//     latency measured from the request's scheduled start (no coordinated omission); prints JSON
//     {phase,p50,p99,p999,sent,ok,errors,cpu,maxPer100ms}: maxPer100ms[i] is the largest latency of the
//     requests scheduled in the i-th 100 ms, to show where in the run the tail sits. With a warm-up, it
//     first runs the same loop that long on the same connections and prints it as phase "warm", then
//     waits for SIGUSR2 before the measured loop (phase "open").
//   closed <ip> <port> <host> <seconds> <connections>: saturated closed loop; prints JSON {rps,ok,errors,cpu}.
//   probe <ip> <port> <host> <path>: one GET; prints JSON {status,ms} (status 0: the request failed).
// <host> is the Host header (the service name); <ip> what the socket dials (a ClusterIP, a pod IP).
import { Agent, request } from 'node:http';
import { dueCount, scheduledAt } from './schedule.mjs';

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

function print(phase, result) {
  process.stdout.write(JSON.stringify({ phase, ...result }) + '\n');
}

/** CPU seconds this process used so far. */
function cpuSeconds() {
  const ru = process.resourceUsage();
  return (ru.userCPUTime + ru.systemCPUTime) / 1e6;
}

/** One open loop at `rps` for `seconds` over the agent's connections. */
async function openLoop(agent, rps, seconds) {
  const lat = [];
  let ok = 0,
    errors = 0,
    sent = 0;
  const total = rps * seconds;
  const cpu0 = cpuSeconds();
  const start = performance.now();
  const inflight = [];
  // Where in the run the tail sits: the largest latency of the requests scheduled in each 100 ms.
  const BIN_MS = 100;
  const binMax = [];
  await new Promise((resolve) => {
    const tick = () => {
      const now = performance.now();
      const due = dueCount(now - start, rps, total);
      while (sent < due) {
        const scheduled = start + scheduledAt(sent, rps);
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
  return {
    p50: pct(lat, 50),
    p99: pct(lat, 99),
    p999: pct(lat, 99.9),
    sent,
    ok,
    errors,
    cpu: (cpuSeconds() - cpu0) / ((performance.now() - start) / 1000),
    maxPer100ms: Array.from(binMax, (v) => Math.round((v ?? 0) * 10) / 10),
  };
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
  const [rps, seconds, conns, warmupSeconds = 0] = rest.map(Number);
  const agent = new Agent({ keepAlive: true, maxSockets: conns, maxFreeSockets: conns });
  // Warm the connections.
  await Promise.all(Array.from({ length: conns }, () => once(agent)));
  if (warmupSeconds > 0) {
    // The warm-up in this same process, on the same connections: the measured loop then starts with a
    // warm generator (its own JIT) and the connections of a steady state, as every path measured gets.
    const warm = await openLoop(agent, rps, warmupSeconds);
    // The caller reads its counters between the phases, then says go (SIGUSR2). The handler is in place
    // before the warm-up's line goes out: the caller may answer it at once. Idle keep-alive sockets do not
    // hold the process open, so a timer does, and ends it if the word never comes.
    const go = new Promise((resolve) => {
      const timer = setTimeout(() => {
        process.stderr.write('loadgen: no SIGUSR2 within 120 s of the warm-up; giving up\n');
        process.exit(2);
      }, 120_000);
      process.once('SIGUSR2', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    print('warm', warm);
    await go;
  }
  print('open', await openLoop(agent, rps, seconds));
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
