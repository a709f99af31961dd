// minimesh proxy benchmark: client → outbound proxy → mTLS → inbound proxy → server, against
// client → server directly, measured in the same run. HTTP/1.1 keep-alive, small bodies.
//
// Setup (say it plainly): both proxies run as separate processes on loopback without iptables; the
// client addresses the outbound proxy explicitly with Host: bench.default.svc.cluster.local, which the
// proxy resolves through a fake destination (the real proto, in this process) to the inbound proxy,
// whose original destination is fixed to the server (BENCH_INBOUND_ORIG). Identity is a fake signer
// speaking the real Certify API. The load generator is its own process, open loop at a fixed rate.
//
//   npm run bench -w @minimesh/proxy            (BENCH_RUNS=3, BENCH_SECONDS=10 by default)
//
// BENCH_TAP=configured|on (this tree's variant only): the inbound proxy serves tap
// (MINIMESH_PROXY_TAP_SVC_NAME); with "on" a tap client holding that identity observes every request it
// serves during the measured phases (limit 10^9), reading each event, as minimesh-tap would.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { credentials } from '@grpc/grpc-js';
import { tap } from '@minimesh/proto';
import { createTestPki } from '../../packages/proxy/test/support/pki.js';
import { startFakeControlPlane } from '../../packages/proxy/test/support/fake-control-plane.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const RATE = 1000;
const CONNS = 100;
const SAT_CONNS = 32;
const SAT_SECONDS = Number(process.env.BENCH_SAT_SECONDS ?? 5);
const AUTHORITY = 'bench.default.svc.cluster.local:80';
const A_ID = 'client.default.serviceaccount.identity.minimesh.cluster.local';
const B_ID = 'server.default.serviceaccount.identity.minimesh.cluster.local';
const TAP_ID = 'minimesh-tap.minimesh.serviceaccount.identity.minimesh.cluster.local';
const TAP = process.env.BENCH_TAP ?? '';
if (TAP !== '' && TAP !== 'configured' && TAP !== 'on') throw new Error(`BENCH_TAP=${TAP}: expected configured or on`);

function lineFrom(child: ChildProcess, prefix: string, timeoutMs = 15_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = '';
    const t = setTimeout(() => reject(new Error(`timed out waiting for "${prefix}"`)), timeoutMs);
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      const line = buf.split('\n').find((l) => l.startsWith(prefix));
      if (line) {
        clearTimeout(t);
        resolve(line);
      }
    });
    child.once('exit', (code) => reject(new Error(`process exited (${code}) before "${prefix}"`)));
  });
}

function cpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

/** Anonymous resident memory only (VmRSS also counts the node binary's shared file pages, ~35 MB here). */
function anonMb(pid: number): number {
  const m = /RssAnon:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) / 1024;
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) / 1024;
}

async function loadgen(args: (string | number)[]): Promise<Record<string, number>> {
  const child = spawn(process.execPath, [join(here, 'loadgen.mjs'), ...args.map(String)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  await new Promise((r) => child.once('exit', r));
  return JSON.parse(out) as Record<string, number>;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** A tap client with the tap service's identity, reading every event of the proxy at `port`. */
async function startTapReader(pki: Awaited<ReturnType<typeof createTestPki>>, port: number) {
  const leaf = await pki.leaf(TAP_ID);
  const client = new tap.TapClient(
    `127.0.0.1:${port}`,
    credentials.createSsl(Buffer.from(pki.anchorPem), Buffer.from(leaf.keyPem), Buffer.from(leaf.certPem)),
    { 'grpc.ssl_target_name_override': B_ID, 'grpc.default_authority': B_ID },
  );
  const call = client.observe({ limit: 1_000_000_000 });
  let events = 0;
  call.on('data', () => events++);
  call.on('error', () => undefined);
  return {
    events: () => events,
    close() {
      call.cancel();
      client.close();
    },
  };
}

async function oneRun(pki: Awaited<ReturnType<typeof createTestPki>>, dist?: string) {
  const cp = await startFakeControlPlane(pki);
  const children: ChildProcess[] = [];
  let dir = '';
  let onCleanup: (() => void) | undefined;
  try {
    const server = spawn(process.execPath, [join(here, 'server.mjs')], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(server);
    const serverPort = Number((await lineFrom(server, 'port ')).split(' ')[1]);
    dir = mkdtempSync(join(tmpdir(), 'mm-px-bench-'));
    writeFileSync(join(dir, 'token'), 'bench-token');
    const env = (id: string, extra: Record<string, string>) => ({
      ...process.env,
      MINIMESH_PROXY_IDENTITY_LOCAL_NAME: id,
      MINIMESH_PROXY_IDENTITY_TRUST_ANCHORS: pki.anchorPem,
      MINIMESH_PROXY_IDENTITY_TOKEN_FILE: join(dir, 'token'),
      MINIMESH_PROXY_IDENTITY_SVC_ADDR: cp.addr,
      MINIMESH_PROXY_DESTINATION_SVC_ADDR: cp.addr,
      MINIMESH_PROXY_INBOUND_LISTEN_ADDR: '127.0.0.1:0',
      MINIMESH_PROXY_OUTBOUND_LISTEN_ADDR: '127.0.0.1:0',
      MINIMESH_PROXY_ADMIN_LISTEN_ADDR: '127.0.0.1:0',
      MINIMESH_PROXY_CONTROL_LISTEN_ADDR: '127.0.0.1:0',
      MINIMESH_PROXY_LOG: 'warn',
      BENCH_SPAWN_AT: String(Date.now()),
      ...(dist ? { BENCH_PROXY_DIST: dist } : {}),
      ...extra,
    });
    const spawnProxy = async (id: string, extra: Record<string, string>) => {
      const child = spawn(
        process.execPath,
        [...(process.env.BENCH_PROXY_NODE_ARGS ?? '').split(' ').filter(Boolean), join(here, 'proxy-runner.mjs')],
        {
          env: { ...env(id, extra), BENCH_SPAWN_AT: String(performance.timeOrigin + performance.now()) },
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      children.push(child);
      const line = await lineFrom(child, 'ready ');
      const [, ms, ports] = line.split(' ');
      return {
        child,
        readyMs: Number(ms),
        ports: JSON.parse(ports!) as { inbound: number; outbound: number; admin: number; control?: number },
      };
    };
    const tapped = !dist && TAP !== '';
    const b = await spawnProxy(B_ID, {
      BENCH_INBOUND_ORIG: `127.0.0.1:${serverPort}`,
      ...(tapped ? { MINIMESH_PROXY_TAP_SVC_NAME: TAP_ID } : {}),
    });
    const reader = tapped && TAP === 'on' ? await startTapReader(pki, b.ports.control ?? 0) : undefined;
    if (reader) onCleanup = () => reader.close();
    cp.destination.set(AUTHORITY, [{ ip: '127.0.0.1', port: b.ports.inbound, identity: B_ID }]);
    const a = await spawnProxy(A_ID, { BENCH_OUTBOUND_ORIG: '127.0.0.1:9' });
    await new Promise((r) => setTimeout(r, 1000));
    const idle = {
      a: rssMb(a.child.pid!),
      b: rssMb(b.child.pid!),
      anonA: anonMb(a.child.pid!),
      anonB: anonMb(b.child.pid!),
    };

    const direct = await loadgen(['open', serverPort, '127.0.0.1', RATE, SECONDS, CONNS]);
    const cpu0 = { a: cpuSeconds(a.child.pid!), b: cpuSeconds(b.child.pid!) };
    const t0 = performance.now();
    const meshed = await loadgen(['open', a.ports.outbound, AUTHORITY, RATE, SECONDS, CONNS]);
    const elapsed = (performance.now() - t0) / 1000;
    const cpu = {
      a: (cpuSeconds(a.child.pid!) - cpu0.a) / elapsed / (RATE / 1000),
      b: (cpuSeconds(b.child.pid!) - cpu0.b) / elapsed / (RATE / 1000),
    };
    const loaded = {
      a: rssMb(a.child.pid!),
      b: rssMb(b.child.pid!),
      anonA: anonMb(a.child.pid!),
      anonB: anonMb(b.child.pid!),
    };
    // Saturated phases: also the CPU (cores) of every process, to see what shares the two cores.
    const procs = { server: server.pid!, a: a.child.pid!, b: b.child.pid! };
    const cpuOf = async (run: () => Promise<Record<string, number>>) => {
      const c0 = Object.fromEntries(Object.entries(procs).map(([k, pid]) => [k, cpuSeconds(pid)]));
      const s0 = performance.now();
      const r = await run();
      const secs = (performance.now() - s0) / 1000;
      return {
        r,
        cpu: Object.fromEntries(Object.entries(procs).map(([k, pid]) => [k, (cpuSeconds(pid) - c0[k]!) / secs])),
      };
    };
    const { r: satDirect, cpu: satDirectCpu } = await cpuOf(() =>
      loadgen(['closed', serverPort, '127.0.0.1', SAT_SECONDS, SAT_CONNS]),
    );
    const { r: satMeshed, cpu: satMeshedCpu } = await cpuOf(() =>
      loadgen(['closed', a.ports.outbound, AUTHORITY, SAT_SECONDS, SAT_CONNS]),
    );
    const tapEvents = reader?.events() ?? 0;
    return {
      addedP50: meshed.p50! - direct.p50!,
      addedP99: meshed.p99! - direct.p99!,
      directP50: direct.p50!,
      directP99: direct.p99!,
      meshedP50: meshed.p50!,
      meshedP99: meshed.p99!,
      meshedErrors: meshed.errors! + satMeshed.errors!,
      satDirect: satDirect.rps!,
      satMeshed: satMeshed.rps!,
      satRatio: satMeshed.rps! / satDirect.rps!,
      cpuA: cpu.a,
      cpuB: cpu.b,
      rssIdleA: idle.a,
      rssIdleB: idle.b,
      rssLoadedA: loaded.a,
      rssLoadedB: loaded.b,
      anonIdleA: idle.anonA,
      anonIdleB: idle.anonB,
      anonLoadedA: loaded.anonA,
      anonLoadedB: loaded.anonB,
      satDirectGenCpu: satDirect.cpu!,
      satDirectServerCpu: satDirectCpu.server!,
      satMeshedGenCpu: satMeshed.cpu!,
      satMeshedServerCpu: satMeshedCpu.server!,
      satMeshedCpuA: satMeshedCpu.a!,
      satMeshedCpuB: satMeshedCpu.b!,
      readyA: a.readyMs,
      readyB: b.readyMs,
      tapEvents,
    };
  } finally {
    onCleanup?.();
    for (const c of children) c.kill(process.env.BENCH_PROXY_NODE_ARGS ? 'SIGINT' : 'SIGKILL');
    if (process.env.BENCH_PROXY_NODE_ARGS) await new Promise((r) => setTimeout(r, 1500));
    await cp.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

const pki = await createTestPki();
// BENCH_AB_DIST=<dir with another build's index.js>: each run measures that build, then this one.
const variants: Array<[string, string | undefined]> = process.env.BENCH_AB_DIST
  ? [
      ['B (BENCH_AB_DIST)', process.env.BENCH_AB_DIST],
      [`A (this tree${TAP ? `, tap ${TAP}` : ''})`, undefined],
    ]
  : [[`this tree${TAP ? ` (tap ${TAP})` : ''}`, undefined]];
const results = new Map<string, Awaited<ReturnType<typeof oneRun>>[]>(variants.map(([l]) => [l, []]));
for (let i = 0; i < RUNS; i++) {
  for (const [label, dist] of variants) {
    const r = await oneRun(pki, dist);
    results.get(label)!.push(r);
    process.stderr.write(
      `run ${i + 1}/${RUNS} ${label}: ${JSON.stringify(Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Math.round(v * 100) / 100])))}\n`,
    );
  }
}
for (const [label, runs] of results) {
  process.stdout.write(`\n### ${label}\n`);
  table(runs);
}

function table(runs: Awaited<ReturnType<typeof oneRun>>[]): void {
  const m = (k: keyof (typeof runs)[number]) => median(runs.map((r) => r[k]));
  const rows: Array<[string, string, string]> = [
    [
      'added latency p50 @1000 rps, 100 conns',
      `${m('addedP50').toFixed(2)} ms (direct ${m('directP50').toFixed(2)} → meshed ${m('meshedP50').toFixed(2)})`,
      '≤ 1 ms',
    ],
    [
      'added latency p99 @1000 rps, 100 conns',
      `${m('addedP99').toFixed(2)} ms (direct ${m('directP99').toFixed(2)} → meshed ${m('meshedP99').toFixed(2)})`,
      '≤ 3 ms',
    ],
    [
      'saturated throughput meshed / direct',
      `${m('satRatio').toFixed(2)} (${m('satMeshed').toFixed(0)} / ${m('satDirect').toFixed(0)} rps, ${SAT_CONNS} conns)`,
      '≥ 0.5',
    ],
    ['CPU per 1k rps, outbound proxy', `${m('cpuA').toFixed(3)} core`, '≤ 0.25'],
    ['CPU per 1k rps, inbound proxy', `${m('cpuB').toFixed(3)} core`, '≤ 0.25'],
    ['RSS idle (outbound / inbound proxy)', `${m('rssIdleA').toFixed(1)} / ${m('rssIdleB').toFixed(1)} MB`, '≤ 50 MB'],
    [
      'RSS at 1k rps, 100 conns (outbound / inbound)',
      `${m('rssLoadedA').toFixed(1)} / ${m('rssLoadedB').toFixed(1)} MB`,
      '≤ 80 MB',
    ],
    [
      '  of which anonymous (not the node binary), idle / loaded',
      `${m('anonIdleA').toFixed(1)} / ${m('anonIdleB').toFixed(1)} · ${m('anonLoadedA').toFixed(1)} / ${m('anonLoadedB').toFixed(1)} MB`,
      '',
    ],
    [
      'saturated CPU (cores): direct generator / server',
      `${m('satDirectGenCpu').toFixed(2)} / ${m('satDirectServerCpu').toFixed(2)}`,
      '',
    ],
    [
      'saturated CPU (cores): meshed generator / outbound / inbound / server',
      `${m('satMeshedGenCpu').toFixed(2)} / ${m('satMeshedCpuA').toFixed(2)} / ${m('satMeshedCpuB').toFixed(2)} / ${m('satMeshedServerCpu').toFixed(2)}`,
      '',
    ],
    [
      'ready after start (certificate in hand)',
      `${m('readyA').toFixed(0)} / ${m('readyB').toFixed(0)} ms`,
      '≤ 1000 ms',
    ],
    ['errors through the mesh (all phases)', `${m('meshedErrors')}`, '0'],
    ...(m('tapEvents') > 0
      ? [['tap events read from the inbound proxy (all phases)', `${m('tapEvents')}`, ''] as [string, string, string]]
      : []),
  ];
  process.stdout.write(
    `\nminimesh proxy benchmark — medians of ${RUNS} runs (${SECONDS} s at ${RATE} rps each), node ${process.version}, ${cpus().length} CPUs\n\n`,
  );
  process.stdout.write('| measure | result | goal |\n|---|---|---|\n');
  for (const [a, b, c] of rows) process.stdout.write(`| ${a} | ${b} | ${c} |\n`);
}
