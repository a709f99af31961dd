// Runs one minimesh proxy (the built dist) for the benchmark, on loopback without iptables: the original
// destination of every accepted connection comes from BENCH_OUTBOUND_ORIG / BENCH_INBOUND_ORIG ("ip:port").
// Everything else is the normal MINIMESH_PROXY_* environment. Prints "ready <ms>" when /ready would be 200.
import { createLogger } from '@minimesh/runtime';
// BENCH_PROXY_DIST: another build of the proxy's dist/index.js (an A/B comparison in one bench run).
const { capYoungGeneration, limitHeapGrowth, parseProxyConfig, startProxy } = await import(
  process.env.BENCH_PROXY_DIST ?? '../../packages/proxy/dist/index.js'
);

const t0 = performance.now();
const fixed = (v) => {
  if (!v) return undefined;
  const i = v.lastIndexOf(':');
  const dst = { ip: v.slice(0, i), port: Number(v.slice(i + 1)) };
  return () => dst;
};
// As main.ts does (BENCH_NO_YOUNG_CAP=1 / BENCH_NO_HEAP_GROWTH_LIMIT=1 to compare without them; BENCH_YOUNG_CAP_MB to try another cap).
if (!process.env.BENCH_NO_YOUNG_CAP)
  capYoungGeneration(process.env.BENCH_YOUNG_CAP_MB ? Number(process.env.BENCH_YOUNG_CAP_MB) : undefined);
if (!process.env.BENCH_NO_HEAP_GROWTH_LIMIT) limitHeapGrowth();
const config = parseProxyConfig(process.env);
const logger = createLogger({ name: 'proxy', level: config.logLevel, format: 'json', destination: process.stderr });
const proxy = await startProxy(config, logger, {
  originalDst: { outbound: fixed(process.env.BENCH_OUTBOUND_ORIG), inbound: fixed(process.env.BENCH_INBOUND_ORIG) },
});
await proxy.ready;
process.stdout.write(
  `ready ${(performance.now() + performance.timeOrigin - Number(process.env.BENCH_SPAWN_AT ?? performance.timeOrigin + t0)).toFixed(1)} ${JSON.stringify(proxy.ports)}\n`,
);
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => void proxy.shutdown(200).then(() => process.exit(0)));
if (process.env.BENCH_HEAP_STATS) {
  const { getHeapSpaceStatistics } = await import('node:v8');
  const { readFileSync } = await import('node:fs');
  setInterval(() => {
    const mb = (n) => (n / 1048576).toFixed(1);
    const spaces = getHeapSpaceStatistics()
      .filter((s) => s.physical_space_size > 0)
      .map((s) => `${s.space_name}=${mb(s.physical_space_size)}/${mb(s.space_used_size)}`);
    const mu = process.memoryUsage();
    const anon = /RssAnon:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    process.stderr.write(
      `heap ${config.localIdentity.split('.')[0]} anon=${mb(Number(anon) * 1024)} ${spaces.join(' ')} external=${mb(mu.external)} ab=${mb(mu.arrayBuffers)}\n`,
    );
  }, 2000).unref();
}
