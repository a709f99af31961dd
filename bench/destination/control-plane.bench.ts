// destination's control-plane benchmark against the real local API server (npm run bench -- destination;
// run it under the cluster lock: flock -w 7200 /tmp/minimesh-cluster.lock npm run bench -- destination).
//
// The program is what ships (packages/destination/bundle/main.mjs), started as a process with its own
// ServiceAccount kubeconfig (least-privilege RBAC) through a relay that counts the connections the API
// server accepts. Two Services hold 100 and 1000 endpoints (EndpointSlices of 100, no selector, so no
// controller touches them). The clients are another process: 100 or 1000 Get streams over 20 gRPC
// connections, in Go by default (../go-clients destination-streams: linkerd2-proxy-api's Go client on grpc-go, as Linkerd's
// figures in packages/destination/README.md were measured); BENCH_CLIENT=node uses streams.mjs (grpc-js).
// One round = one PUT of an EndpointSlice replacing one address; propagation is the time from just
// before the PUT until each stream has the add of the new address (API server, watch, index,
// translation and gRPC included), p50/p99 over every stream of 20 rounds (after 3 warm-up rounds).
// The baseline, in the same rounds: a plain watch of the same slices, through the same relay, i.e.
// what the API server alone takes; "added by destination" is the difference of the two p50s.
// Also: start to ready, idle RSS, CPU to open the streams, RSS with 1000 idle streams on 1000 endpoints.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createKubeClient, loadKubeConfig } from '@minimesh/kube';
import { startConnectionCounter } from '@minimesh/kube/testing';
import {
  adminClient,
  createNamespace,
  ensureCluster,
  kubeconfigForServiceAccount,
  NODE_NAME,
} from '@minimesh/local-cluster';
import { startDriven } from '../lib/driven.js';
import { freePort, procStat } from '../lib/proc.js';
import { type Figure, newRun, percentile, phase, round, saveRun, stopProcess, table, watchdog } from '../lib/report.js';
import { destinationRbac } from '../../packages/destination/test/helpers.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const WARMUP = 3;
const CONNECTIONS = 20;
const here = fileURLToPath(new URL('.', import.meta.url));
const repo = join(here, '..', '..');
const bundled = join(repo, 'packages', 'destination', 'bundle', 'main.mjs');
// Peer mode: Linkerd's Go controller (linkerd2's ./controller/cmd at edge-26.8.3, built with Go from the Go
// module proxy outside this repository; the path comes from BENCH_LINKERD_CONTROLLER) measured by the same
// bench in place of minimesh-destination. It needs Linkerd's ServiceProfile, Server and ExternalWorkload
// CRDs in the cluster. packages/destination/README.md has the figures.
const peer = process.env.BENCH_LINKERD_CONTROLLER;
const entry =
  process.env.BENCH_ENTRY ?? (existsSync(bundled) ? bundled : join(repo, 'packages', 'destination', 'dist', 'main.js'));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.timeOrigin + performance.now();

const endpointIp = (svc: number, i: number) => `10.40.${svc === 100 ? 0 : 10 + Math.floor(i / 250)}.${(i % 250) + 1}`;
const roundIp = (svc: number, round: number) => `10.41.${svc === 100 ? 0 : 100}.${(round % 250) + 1}`;

function slice(ns: string, svc: number, part: number, replaceLast?: string): Record<string, unknown> {
  const endpoints = Array.from({ length: 100 }, (_, k) => ({
    addresses: [k === 99 && replaceLast ? replaceLast : endpointIp(svc, part * 100 + k)],
    conditions: { ready: true, serving: true, terminating: false },
  }));
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: `web-${svc}-${part}`,
      namespace: ns,
      labels: {
        'kubernetes.io/service-name': `web-${svc}`,
        'endpointslice.kubernetes.io/managed-by': 'destination-bench',
      },
    },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    endpoints,
  };
}

async function main(): Promise<void> {
  const children: ChildProcess[] = [];
  watchdog(20 * 60_000, () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  });
  phase('ensureCluster');
  const cluster = await ensureCluster();
  const admin = adminClient();
  const suffix = Date.now().toString(36);
  const ns = `mm-bench-dst-${suffix}`;
  const cpNs = `mm-bench-dst-cp-${suffix}`;
  const rbacName = `mm-bench-dst-${suffix}`;
  const dir = mkdtempSync(join(tmpdir(), 'mm-bench-dst-'));
  const closers: Array<() => Promise<void>> = [];
  console.log(
    `destination bench: ${peer ?? entry.replace(`${repo}/`, '')} against ${cluster.kubeconfigPath}, ${ROUNDS} rounds per case`,
  );
  if (peer) {
    if (!existsSync(peer))
      throw new Error(`BENCH_LINKERD_CONTROLLER=${peer}: no such file (Linkerd's controller binary)`);
    const crds = ['serviceprofiles.linkerd.io', 'servers.policy.linkerd.io', 'externalworkloads.workload.linkerd.io'];
    const missing: string[] = [];
    for (const crd of crds)
      if (!(await admin.get(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd}`))) missing.push(crd);
    if (missing.length > 0)
      throw new Error(`Linkerd's destination waits for these CRDs, missing from the cluster: ${missing.join(', ')}`);
  }
  try {
    phase(`namespaces, RBAC, Services and EndpointSlices in ${ns}`);
    await createNamespace(ns);
    await createNamespace(cpNs);
    const rbac = destinationRbac(rbacName, cpNs, 'minimesh-destination');
    await admin.request('POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', rbac.clusterRole);
    await admin.request('POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', rbac.clusterRoleBinding);
    await admin.request('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${cpNs}/roles`, rbac.role);
    await admin.request('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${cpNs}/rolebindings`, rbac.roleBinding);
    const kubeconfig = await kubeconfigForServiceAccount({ namespace: cpNs, serviceAccount: 'minimesh-destination' });
    for (const svc of [100, 1000]) {
      await admin.request('POST', `/api/v1/namespaces/${ns}/services`, {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: `web-${svc}`, namespace: ns },
        spec: { ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
      });
      for (let part = 0; part < svc / 100; part++)
        await admin.request('POST', `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`, slice(ns, svc, part));
    }
    await sleep(1000); // RBAC reaches the authorizer

    // the connection-counting relay in front of the API server
    const api = new URL(JSON.parse(readFileSync(kubeconfig, 'utf8')).clusters[0].cluster.server as string);
    const counter = await startConnectionCounter({ host: api.hostname, port: Number(api.port) });
    closers.push(() => counter.close());
    const relay = (from: string, name: string): string => {
      const kc = JSON.parse(readFileSync(from, 'utf8')) as { clusters: { cluster: { server: string } }[] };
      for (const c of kc.clusters) c.cluster.server = `https://127.0.0.1:${counter.port}`;
      writeFileSync(join(dir, name), JSON.stringify(kc));
      return join(dir, name);
    };
    // Linkerd's destination (peer mode) runs as the cluster admin: its RBAC is not minimesh's to write
    const relayed = peer
      ? relay(cluster.kubeconfigPath, 'relayed-admin.kubeconfig')
      : relay(kubeconfig, 'relayed.kubeconfig');

    const start = async () => {
      const [grpcPort, adminPort] = [await freePort(), await freePort()];
      const t0 = now();
      const child = peer
        ? spawn(
            peer,
            [
              'destination',
              `-addr=127.0.0.1:${grpcPort}`,
              `-metrics-addr=127.0.0.1:${adminPort}`,
              `-kubeconfig=${relayed}`,
              `-controller-namespace=${cpNs}`,
              '-cluster-domain=cluster.local',
              '-identity-trust-domain=cluster.local',
              '-log-level=warn',
            ],
            // HOSTNAME: its ExternalWorkload controller's Lease holder (the pod's name in a cluster)
            { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, HOSTNAME: `bench-${suffix}` } },
          )
        : spawn(
            process.execPath,
            [
              entry,
              '--addr',
              `127.0.0.1:${grpcPort}`,
              '--admin-addr',
              `127.0.0.1:${adminPort}`,
              '--kubeconfig',
              relayed,
              '--controller-namespace',
              cpNs,
              '--log-level',
              'warn',
              '--log-format',
              'json',
            ],
            { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, POD_NAME: `bench-${suffix}` } },
          );
      children.push(child);
      for (;;) {
        const ok = await fetch(`http://127.0.0.1:${adminPort}/ready`).then(
          (r) => r.status === 200,
          () => false,
        );
        if (ok) break;
        if (child.exitCode !== null) throw new Error(`destination exited (${child.exitCode}) before it was ready`);
        if (now() - t0 > 60_000) throw new Error('destination not ready within 60 s');
        await sleep(2);
      }
      return { child, grpcPort, readyMs: now() - t0 };
    };
    const stop = async (child: ChildProcess) => {
      const how = await stopProcess(child);
      if (!how.startsWith('stopped on SIGTERM (exit 0')) phase(`pid ${child.pid} ${how}`);
      return how;
    };
    phase('start to ready x3');
    const readies: number[] = [];
    for (let i = 0; i < 2; i++) {
      const s = await start();
      readies.push(s.readyMs);
      await stop(s.child);
    }
    const inst = await start();
    readies.push(inst.readyMs);
    readies.sort((a, b) => a - b);
    const pid = inst.child.pid as number;
    await sleep(3000);
    const idle = procStat(pid);

    // the baseline: a plain watch of the same slices, from the same clock
    // through the same relay as destination, so that the two differ only by what destination does
    const adminConfig = await loadKubeConfig({ path: cluster.kubeconfigPath });
    const watchClient = createKubeClient(
      { ...adminConfig, server: `https://127.0.0.1:${counter.port}` },
      { userAgent: 'bench-baseline' },
    );
    const seen = new Map<string, number>();
    const watchStop = new AbortController();
    void watchClient
      .watch(
        `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`,
        { resourceVersion: '0' },
        (_t, obj) => {
          const t = now();
          for (const e of (obj as { endpoints?: Array<{ addresses: string[] }> }).endpoints ?? [])
            for (const a of e.addresses) if (!seen.has(a)) seen.set(a, t);
        },
        { signal: watchStop.signal },
      )
      .catch(() => undefined);
    closers.push(async () => {
      watchStop.abort();
      await watchClient.close();
    });

    const clients = startDriven({
      go: 'destination-streams',
      script: join(here, 'streams.mjs'),
      label: 'stream client',
    });
    const client = clients.kind;
    await clients.next(); // started
    children.push(clients.child);
    const figures: Record<string, Figure> = {};
    const raw: Record<string, unknown> = {};
    const linkerd: Record<string, [number, number]> = { '100x100': [3.0, 6.0], '1000x100': [4.2, 7.1] };
    let roundNo = 0;
    for (const svc of [100, 1000]) {
      for (const streams of [100, 1000]) {
        const name = `${svc} endpoints x ${streams} streams`;
        phase(name);
        const cpu0 = procStat(pid).cpu;
        const t0 = now();
        clients.send({
          cmd: 'open',
          port: inst.grpcPort,
          path: `web-${svc}.${ns}.svc.cluster.local:80`,
          // as a proxy on the node sends it (Linkerd's destination looks the node up for its zone)
          contextToken: JSON.stringify({ ns, nodeName: NODE_NAME, pod: `bench-${suffix}` }),
          streams,
          connections: CONNECTIONS,
        });
        await clients.next();
        const openMs = now() - t0;
        const openCpu = procStat(pid).cpu - cpu0;
        const latencies: number[] = [];
        const apiDelivery: number[] = [];
        for (let r = -WARMUP; r < ROUNDS; r++) {
          const ip = roundIp(svc, roundNo++);
          clients.send({ cmd: 'expect', ip });
          await clients.next(); // armed
          const before = now();
          // through a kept-alive HTTP/2 connection: no handshake inside the measured time
          await watchClient.requestOk(
            'PUT',
            `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices/web-${svc}-0`,
            slice(ns, svc, 0, ip),
          );
          const { times } = await clients.next<{ times: number[] }>();
          if (r >= 0) {
            for (const t of times) latencies.push(t - before);
            const w = seen.get(ip);
            if (w !== undefined) apiDelivery.push(w - before);
          }
          await sleep(50);
        }
        latencies.sort((a, b) => a - b);
        apiDelivery.sort((a, b) => a - b);
        const l = linkerd[`${svc}x${streams}`];
        figures[`${name}: propagation p50`] = {
          value: round2(percentile(latencies, 50)),
          unit: 'ms',
          better: 'lower',
          ...(l ? { linkerd: l[0] } : {}),
          ...(svc === 1000 && streams === 100 ? { goal: round2(4.2 * 1.3) } : {}),
        };
        figures[`${name}: propagation p99`] = {
          value: round2(percentile(latencies, 99)),
          unit: 'ms',
          better: 'lower',
          ...(l ? { linkerd: l[1] } : {}),
        };
        figures[`${name}: API watch alone p50`] = {
          value: round2(percentile(apiDelivery, 50)),
          unit: 'ms',
          better: 'lower',
        };
        figures[`${name}: added by destination p50`] = {
          value: round2(percentile(latencies, 50) - percentile(apiDelivery, 50)),
          unit: 'ms',
          better: 'lower',
        };
        figures[`${name}: CPU to open the streams`] = {
          value: round2(openCpu),
          unit: 's',
          better: 'lower',
          ...(svc === 1000 && streams === 1000 ? { linkerd: 9.7 } : {}),
        };
        raw[name] = { openMs: Math.round(openMs), samples: latencies.length };
        if (svc === 1000 && streams === 1000) {
          await sleep(3000);
          figures['RSS with 1000 idle streams on 1000 endpoints'] = {
            value: round2(procStat(pid).rssMb),
            unit: 'MB',
            better: 'lower',
            linkerd: 363,
            goal: 363,
          };
        }
        clients.send({ cmd: 'close' });
        await clients.next();
        await sleep(500);
      }
    }
    clients.send({ cmd: 'exit' });
    await stop(inst.child);

    const run = newRun(
      peer ? 'destination-linkerd' : 'destination',
      `${peer ? `Linkerd's destination (${peer})` : entry.replace(`${repo}/`, '')}, ${client} clients`,
    );
    run.figures = {
      'start to ready (median of 3)': {
        value: Math.round(percentile(readies, 50)),
        unit: 'ms',
        better: 'lower',
        goal: 300,
      },
      'idle RSS (no streams)': { value: round2(idle.rssMb), unit: 'MB', better: 'lower', linkerd: 81, goal: 90 },
      ...figures,
      // every start above went through the relay: 3 processes, each should open one connection (the
      // baseline's own connection is the one more)
      'API server connections per process (3 started)': {
        value: round2((counter.connections - 1) / 3),
        unit: '',
        better: 'lower',
        goal: 1,
      },
    };
    run.raw = { readies, ...raw, rounds: ROUNDS, client };
    const previous = saveRun(join(here, peer ? 'runs-linkerd.json' : 'runs.json'), run);
    console.log(`\n${table(run, previous)}\n`);
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    for (const close of closers) await close().catch(() => undefined);
    await admin
      .request('DELETE', `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${rbacName}`)
      .catch(() => undefined);
    await admin.request('DELETE', `/apis/rbac.authorization.k8s.io/v1/clusterroles/${rbacName}`).catch(() => undefined);
    await admin.request('DELETE', `/api/v1/namespaces/${ns}`).catch(() => undefined);
    await admin.request('DELETE', `/api/v1/namespaces/${cpNs}`).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

const round2 = (n: number): number => round(n, 2);

await main();
