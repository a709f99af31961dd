// Faults under load (issue 17 item 2, issue 15 items 2 and 4): a meshed client (`load`, e2e/scripts/
// load.mjs) sends 200 requests a second through its proxy, mTLS, to a meshed server (2 pods), and
// counts every request, while, in turn:
//   f. the chart is upgraded from the previous version (commit 97042ba's chart) to this one;
//   a. the destination pod is deleted;
//   b. the identity pod is deleted (scaled to 0) just before the client's proxy renews its certificate,
//      and kept down until that renewal has failed (leaves live 60 s here: proxies renew every 42 s);
//   c. the issuer is rotated (new issuer from the same root), then the root (docs/certificates.md, step
//      by step: bundle, restart, new issuer, drop the old root, restart);
//   d. kube-apiserver is restarted (every watch stream cut);
//   e. a server pod is killed (SIGKILL to its app and proxy) mid-stream.
// Goal: no failed request for the control-plane faults, the rotations and the upgrade; for the killed
// pod, only requests already sent to it may fail. The figures are printed as docs/reliability.md's table.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectDriver } from '../drivers/index.js';
import { certFiles, type CertFiles } from '../src/certs.js';
import type { K8sObject } from '../src/chart.js';
import { LoadCollector, loadObjects, type LoadFailure } from '../src/load.js';
import {
  appObjects,
  applyObjects,
  createMeshCerts,
  describePods,
  eventually,
  installChart,
  isReady,
  kubectlJson,
  metricSum,
  proxyMetrics,
  uninstallChart,
  waitForReadyPods,
  type MeshSetup,
  type Pod,
} from '../src/mesh.js';
import { chartDir, cliMain, repoRoot, run, runOk } from '../src/tools.js';

const driver = selectDriver();
const suffix = randomBytes(3).toString('hex');
const RPS = 200;
/** Leaf lifetime for this install: short, so proxies renew (at 70 %: every 42 s) during the spec. */
const LEAF_LIFETIME = '60s';
/** The chart before this one, for the upgrade (docs/reliability.md). */
const PREVIOUS_CHART_COMMIT = '97042ba';
const m: MeshSetup = {
  driver,
  cpNs: process.env.MINIMESH_E2E_NAMESPACE ?? (driver.name === 'k3d' ? 'minimesh' : `minimesh-faults-${suffix}`),
  appNs: `mm-faults-app-${suffix}`,
  release: 'minimesh',
  scopeWebhook: driver.name === 'local',
  sets: [`identity.issuer.issuanceLifetime=${LEAF_LIFETIME}`],
};
const CP = 'minimesh.io/control-plane-component';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

let tmp = '';
let certs: CertFiles;
let load: LoadCollector;

interface Row {
  fault: string;
  sent: number;
  failed: number;
  recoveryMs: number;
  note: string;
  failures: LoadFailure[];
}
const rows: Row[] = [];

function say(line: string): void {
  console.log(`[faults] ${line}`);
}

async function ready(ns: string, app: string, replicas = 1, key = 'app'): Promise<Pod[]> {
  try {
    return await waitForReadyPods(driver, ns, app, replicas, 240_000, key);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${await describePods(driver, ns)}`, { cause: err });
  }
}

async function kubectlOk(args: readonly string[]): Promise<string> {
  const r = await driver.kubectl(args);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr.trim()}`);
  return r.stdout;
}

async function helmOk(args: readonly string[]): Promise<void> {
  const r = await driver.helm(args);
  if (r.code !== 0) throw new Error(`helm ${args.join(' ')}: ${r.stderr.trim()}`);
}

/** `kubectl rollout status` of every Deployment in the namespace. */
async function rolledOut(ns: string): Promise<void> {
  const names = (await kubectlOk(['get', 'deploy', '-n', ns, '-o', 'name'])).split('\n').filter(Boolean);
  for (const d of names) await kubectlOk(['rollout', 'status', '-n', ns, d, '--timeout=240s']);
}

/** `minimesh <args>`, as a user runs it. */
async function minimesh(args: readonly string[]): Promise<string> {
  return runOk(process.execPath, [cliMain, ...args]);
}

/** The traffic flows: the last 2 s of ticks show at least 75 % of the rate answered. */
async function flowing(): Promise<void> {
  await eventually('the load answered at 75 % of its rate for 2 s', 120_000, async () => {
    const t = load.lastTick();
    if (t === 0) return false;
    const w = load.window(t - 2000, t);
    return w.ok >= 2 * RPS * 0.75;
  });
}

/**
 * Runs one fault with the load flowing: `fault` returns once the faulted part is back (its own
 * recovery); the window ends 5 s later. Records the row before any assertion.
 */
let faultStart = 0;
const timeline: string[] = [];
/** Notes a step of the fault being applied, with the time since the fault started. */
function mark(step: string): void {
  timeline.push(`+${((Date.now() - faultStart) / 1000).toFixed(1)}s ${step}`);
}

/** Failures grouped by what they were, with when they were sent (s since the fault started). */
function summarize(failures: readonly LoadFailure[], from: number): string[] {
  const groups = new Map<string, LoadFailure[]>();
  for (const f of failures) {
    const key = f.error ?? `HTTP ${f.status} ${f.proxyError ?? ''}`.trim();
    groups.set(key, [...(groups.get(key) ?? []), f]);
  }
  const s = (t: number) => ((t - from) / 1000).toFixed(2);
  return [...groups].map(
    ([k, fs]) =>
      `${fs.length} × ${k}: sent +${s(Math.min(...fs.map((f) => f.sent)))}s .. +${s(Math.max(...fs.map((f) => f.sent)))}s, failed by +${s(Math.max(...fs.map((f) => f.at)))}s`,
  );
}

/** The last log lines of the proxies and the control plane, to explain failures. */
async function diagnostics(sinceSeconds: number): Promise<string> {
  const out: string[] = [];
  const tail = async (ns: string, pod: string, container: string) => {
    const r = await driver.kubectl(['logs', '-n', ns, pod, '-c', container, `--since=${sinceSeconds}s`, '--tail=25']);
    out.push(`--- ${ns}/${pod}/${container}\n${(r.stdout || r.stderr).trim()}`);
  };
  for (const p of await proxiedPods(m.appNs)) {
    await tail(m.appNs, p.metadata.name, 'minimesh-proxy');
    // A container that restarted: how it ended, and its last words.
    const statuses = [...(p.status.initContainerStatuses ?? []), ...(p.status.containerStatuses ?? [])] as Array<{
      name: string;
      restartCount?: number;
      lastState?: { terminated?: Record<string, unknown> };
    }>;
    for (const c of statuses.filter((x) => (x.restartCount ?? 0) > 0)) {
      out.push(
        `--- ${p.metadata.name}/${c.name} restarted ${c.restartCount}×, last: ${JSON.stringify(c.lastState?.terminated ?? {})}`,
      );
      const prev = await driver.kubectl([
        'logs',
        '-n',
        m.appNs,
        p.metadata.name,
        '-c',
        c.name,
        '--previous',
        '--tail=40',
      ]);
      out.push((prev.stdout || prev.stderr).trim());
    }
  }
  for (const c of ['destination', 'identity']) {
    const pod = await podOf(m.cpNs, `${CP}=${c}`).catch(() => undefined);
    if (pod) {
      await tail(m.cpNs, pod.metadata.name, c);
      await tail(m.cpNs, pod.metadata.name, 'minimesh-proxy');
    }
  }
  out.push((await driver.kubectl(['get', 'pods', '-n', m.cpNs, '-o', 'wide'])).stdout);
  return out.join('\n');
}

async function measure(fault: string, inject: () => Promise<string>): Promise<Row> {
  await flowing();
  const from = Date.now();
  faultStart = from;
  timeline.length = 0;
  const note = await inject();
  mark('back');
  const back = Date.now();
  await sleep(5000);
  await flowing();
  const to = Date.now();
  await eventually('a load tick after the window', 10_000, async () => load.lastTick() > to);
  const w = load.window(from, to);
  const lastFailure = Math.max(0, ...w.failures.map((f) => f.at));
  const row: Row = {
    fault,
    sent: w.sent,
    failed: w.failures.length,
    recoveryMs: Math.max(back, lastFailure) - from,
    note: `${note}; slowest answer ${w.maxMs} ms`,
    failures: w.failures,
  };
  rows.push(row);
  say(
    `${fault}: sent ${row.sent}, failed ${row.failed}, recovered in ${(row.recoveryMs / 1000).toFixed(1)} s (${row.note})`,
  );
  say(`  timeline: ${timeline.join('; ')}`);
  if (w.failures.length > 0) {
    for (const line of summarize(w.failures, from)) say(`  failed: ${line}`);
    for (const f of w.failures.slice(0, 5)) say(`  e.g. ${JSON.stringify(f)}`);
    const first = Math.min(...w.failures.map((f) => f.sent));
    const last = Math.max(...w.failures.map((f) => f.at));
    say(`  load around the failures:\n    ${load.ticksBetween(first - 3000, last + 3000, from).join('\n    ')}`);
    say(`  diagnostics:\n${await diagnostics(Math.ceil((Date.now() - from) / 1000) + 5)}`);
  }
  return row;
}

async function podOf(ns: string, selector: string): Promise<Pod> {
  const pods = (await kubectlJson<{ items: Pod[] }>(driver, ['get', 'pods', '-n', ns, '-l', selector])).items.filter(
    (p) => p.status.phase === 'Running',
  );
  if (pods.length === 0) throw new Error(`no running pod ${ns} -l ${selector}`);
  return pods[0] as Pod;
}

/** The load pods' and the server pods' proxies (the meshed workloads of this spec). */
async function meshedPods(): Promise<Pod[]> {
  const list = await kubectlJson<{ items: Pod[] }>(driver, ['get', 'pods', '-n', m.appNs]);
  return list.items.filter(
    (p) => p.status.phase === 'Running' && !(p.metadata as { deletionTimestamp?: string }).deletionTimestamp,
  );
}

/** The identity controller's issuer reloads (result="updated"), summed over its pods. */
async function issuerReloads(): Promise<number> {
  const pod = await podOf(m.cpNs, `${CP}=identity`);
  return metricSum(await proxyMetrics(driver, m.cpNs, pod.metadata.name, 9990), 'identity_issuer_reloads_total', {
    result: 'updated',
  });
}

/** Pods with a proxy in a namespace (the control plane's are meshed too). */
async function proxiedPods(ns: string): Promise<Pod[]> {
  const list = await kubectlJson<{ items: Pod[] }>(driver, ['get', 'pods', '-n', ns]);
  return list.items.filter(
    (p) =>
      p.status.phase === 'Running' &&
      !(p.metadata as { deletionTimestamp?: string }).deletionTimestamp &&
      [...(p.spec.initContainers ?? []), ...p.spec.containers].some((c) => c.name === 'minimesh-proxy'),
  );
}

/** Waits until every proxy (apps and control plane) refreshed its certificate after `since` (epoch ms). */
async function everyProxyRenewedAfter(since: number): Promise<void> {
  await eventually('every proxy renewed its certificate', 120_000, async () => {
    for (const ns of [m.appNs, m.cpNs])
      for (const p of await proxiedPods(ns)) {
        const text = await proxyMetrics(driver, ns, p.metadata.name);
        if (metricSum(text, 'control_identity_cert_refresh_timestamp_seconds') * 1000 <= since) return false;
      }
    return true;
  });
}

/** Every meshed proxy's trust anchors (the injected env), one PEM string per pod. */
async function proxyAnchors(): Promise<string[]> {
  return (await meshedPods()).map(
    (p) =>
      [...(p.spec.initContainers ?? []), ...p.spec.containers]
        .find((c) => c.name === 'minimesh-proxy')
        ?.env?.find((e) => e.name === 'MINIMESH_PROXY_IDENTITY_TRUST_ANCHORS')?.value ?? '',
  );
}

/**
 * The server's app waits 3 s after a pod's deletion before it gets SIGTERM (preStop sleep), as
 * Kubernetes apps behind a Service must: until every client has heard the endpoint is gone (endpoint
 * controller, destination, the client's proxy; kube-proxy without a mesh), requests still arrive. The
 * rollouts of step c2 replace the server pods with traffic flowing.
 */
function withPreStopSleep(d: K8sObject): K8sObject {
  const spec = d.spec as { template: { spec: { containers: Array<Record<string, unknown>> } } };
  for (const c of spec.template.spec.containers) c.lifecycle = { preStop: { sleep: { seconds: 3 } } };
  return d;
}

beforeAll(async () => {
  say(await driver.setup());
  tmp = mkdtempSync(join(tmpdir(), 'mm-e2e-faults-'));
  certs = await createMeshCerts(join(tmp, 'certs'));
  // The previous chart, as released at that commit.
  const old = join(tmp, 'previous');
  mkdirSync(old);
  const r = await run('bash', [
    '-c',
    `set -o pipefail; git -C "${repoRoot}" archive ${PREVIOUS_CHART_COMMIT} charts/ | tar -x -C "${old}"`,
  ]);
  if (r.code !== 0)
    throw new Error(
      `cannot extract the previous chart (git archive ${PREVIOUS_CHART_COMMIT} charts/): ${r.stderr.trim()}; the e2e needs the repository's history`,
    );
  say(await installChart(m, certs, join(old, 'charts', 'minimesh')));
  for (const c of ['identity', 'destination', 'injector']) await ready(m.cpNs, c, 1, CP);
  const apps = appObjects(m, 2)
    .filter((o) => !(o.kind === 'Deployment' && o.metadata.name === 'client'))
    .map((o) => (o.kind === 'Deployment' && o.metadata.name === 'server' ? withPreStopSleep(o) : o));
  await applyObjects(driver, [
    ...apps,
    ...loadObjects({
      driver,
      ns: m.appNs,
      sa: 'client',
      rps: RPS,
      // 50 ms at the server: about 10 requests in flight at any time, so a killed pod has some.
      url: `http://server.${m.appNs}.svc.cluster.local:8080/delay/50`,
    }),
  ]);
  await ready(m.appNs, 'server', 2);
  await ready(m.appNs, 'load');
  load = new LoadCollector(driver, m.appNs, 'app=load', say);
  load.start();
  await flowing();
  say(`load flowing: ${RPS} rps from ${load.podNames().join(', ')}`);
}, 600_000);

afterAll(async () => {
  load?.stop();
  if (rows.length > 0) {
    const table = [
      '| Fault | Requests sent | Failed | Recovery time | Notes |',
      '| --- | --- | --- | --- | --- |',
      ...rows.map(
        (r) =>
          `| ${r.fault} | ${r.sent.toLocaleString('en')} | ${r.failed} | ${(r.recoveryMs / 1000).toFixed(1)} s | ${r.note} |`,
      ),
    ].join('\n');
    console.log(`[faults] the table (docs/reliability.md):\n${table}`);
    const dir = join(repoRoot, 'e2e', '.artifacts');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'faults-table.md'), `${table}\n`);
  }
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  if (process.env.MINIMESH_E2E_KEEP === '1') return;
  await driver.kubectl(['delete', 'namespace', m.appNs, '--wait=false', '--ignore-not-found']);
  if (driver.name === 'local') await uninstallChart(m);
}, 180_000);

describe(`faults under load (${RPS} rps, mTLS) on the ${driver.name} cluster`, () => {
  it('f. helm upgrade from the previous chart to this one: 0 failed requests', async () => {
    const row = await measure(`helm upgrade from the chart of ${PREVIOUS_CHART_COMMIT} to this one`, async () => {
      await installChart(m, certs, chartDir);
      mark('helm upgrade done');
      await rolledOut(m.cpNs);
      return `control plane rolled out`;
    });
    expect(row.failures).toEqual([]);
  }, 400_000);

  it('a. destination pod deleted: 0 failed requests', async () => {
    const row = await measure('destination pod deleted', async () => {
      const pod = await podOf(m.cpNs, `${CP}=destination`);
      await kubectlOk(['delete', 'pod', '-n', m.cpNs, pod.metadata.name, '--wait=false']);
      mark('destination pod deleted');
      const [next] = await ready(m.cpNs, 'destination', 1, CP);
      return `${pod.metadata.name} deleted, ${next?.metadata.name} ready`;
    });
    expect(row.failures).toEqual([]);
  }, 400_000);

  it('b. identity down while the proxies renew: 0 failed requests', async () => {
    const client = await podOf(m.appNs, 'app=load');
    const before = await proxyMetrics(driver, m.appNs, client.metadata.name);
    const errorsBefore = metricSum(before, 'control_identity_cert_refreshes_total', { result: 'error' });
    const okBefore = metricSum(before, 'control_identity_cert_refreshes_total', { result: 'ok' });
    // The proxy renews at 70 % of the remaining lifetime, counted from its last refresh.
    const refreshed = metricSum(before, 'control_identity_cert_refresh_timestamp_seconds') * 1000;
    const expires = metricSum(before, 'control_identity_cert_expiration_timestamp_seconds') * 1000;
    const renewAt = refreshed + Math.max(10_000, 0.7 * (expires - refreshed));
    const wait = renewAt - Date.now() - 3000;
    if (wait > 0) await sleep(wait);
    let errors = 0;
    const row = await measure(`identity pod deleted while the proxies renew (leaves of ${LEAF_LIFETIME})`, async () => {
      // Scaled to 0 (the pod is deleted) and kept down until the client's proxy has failed to renew.
      const pod = await podOf(m.cpNs, `${CP}=identity`);
      await kubectlOk(['scale', 'deploy', '-n', m.cpNs, '-l', `${CP}=identity`, '--replicas=0']);
      const down = Date.now();
      errors = await eventually('a failed renewal while identity is down', 60_000, async () => {
        const text = await proxyMetrics(driver, m.appNs, client.metadata.name);
        const n = metricSum(text, 'control_identity_cert_refreshes_total', { result: 'error' }) - errorsBefore;
        return n > 0 ? n : undefined;
      });
      const failedAfter = Date.now() - down;
      await kubectlOk(['scale', 'deploy', '-n', m.cpNs, '-l', `${CP}=identity`, '--replicas=1']);
      const [next] = await ready(m.cpNs, 'identity', 1, CP);
      return `${pod.metadata.name} deleted (scaled to 0) 3 s before the client's renewal was due; its renewal failed ${(failedAfter / 1000).toFixed(1)} s later; ${next?.metadata.name} ready ${((Date.now() - down) / 1000).toFixed(1)} s after the deletion`;
    });
    // The client's proxy renewed once identity was back.
    await eventually('the client proxy renewed after identity came back', 60_000, async () => {
      const text = await proxyMetrics(driver, m.appNs, client.metadata.name);
      return metricSum(text, 'control_identity_cert_refreshes_total', { result: 'ok' }) > okBefore;
    });
    say(`client proxy: ${errors} renewal(s) failed while identity was down, then renewed`);
    expect(errors).toBeGreaterThan(0);
    expect(row.failures).toEqual([]);
  }, 400_000);

  it('c1. issuer rotated (new issuer from the same root): 0 failed requests', async () => {
    const dir = join(tmp, 'issuer-2');
    const row = await measure('issuer rotated (new issuer, same root)', async () => {
      const reloads = await issuerReloads();
      await minimesh(['certs', 'create', '--ca', certs.caCrt, '--ca-key', certs.caKey, '--dir', dir]);
      mark('new issuer made');
      const next = certFiles(dir);
      await helmOk([
        'upgrade',
        m.release,
        chartDir,
        '-n',
        m.cpNs,
        '--reuse-values',
        '--set-file',
        `identity.issuer.tls.crtPEM=${next.issuerCrt}`,
        '--set-file',
        `identity.issuer.tls.keyPEM=${next.issuerKey}`,
      ]);
      mark('helm upgrade done');
      await eventually('identity reloaded the new issuer', 120_000, async () => (await issuerReloads()) > reloads);
      mark('identity reloaded the issuer');
      const reloaded = Date.now();
      await everyProxyRenewedAfter(reloaded);
      mark('every proxy renewed');
      return `identity reloaded the issuer without a restart; every proxy renewed from it`;
    });
    expect(row.failures).toEqual([]);
  }, 400_000);

  it('c2. trust anchor rotated as docs/certificates.md says (bundle, new issuer, drop the old root): 0 failed requests', async () => {
    const dir = join(tmp, 'root-2');
    const next = certFiles(dir);
    const upgrade = (...sets: string[]) =>
      helmOk(['upgrade', m.release, chartDir, '-n', m.cpNs, '--reuse-values', ...sets]);
    // `rollout status` returns while the old pods are still terminating; an old injector pod keeps
    // answering the API server's webhook calls on its open connection, and would inject the anchors it
    // was started with. Wait until they are gone (docs/certificates.md says so).
    const settled = (ns: string) =>
      eventually(`no terminating pod in ${ns}`, 120_000, async () => {
        const list = await kubectlJson<{ items: Pod[] }>(driver, ['get', 'pods', '-n', ns]);
        return list.items.every((p) => !(p.metadata as { deletionTimestamp?: string }).deletionTimestamp);
      });
    const restartApps = async () => {
      await settled(m.cpNs);
      await kubectlOk(['rollout', 'restart', 'deploy', '-n', m.appNs]);
      await rolledOut(m.appNs);
      await settled(m.appNs);
    };
    const row = await measure('trust anchor rotated (bundle, new issuer, old root dropped)', async () => {
      // 1. A new root and an issuer under it; the bundle: new first, then old.
      await minimesh(['certs', 'create', '--dir', dir]);
      const bundle = join(tmp, 'bundle.crt');
      writeFileSync(bundle, readFileSync(next.caCrt, 'utf8') + readFileSync(certs.caCrt, 'utf8'));
      // 2. Trust both; the control plane rolls; the workloads restart to get the bundle.
      await upgrade('--set-file', `identityTrustAnchorsPEM=${bundle}`);
      await rolledOut(m.cpNs);
      mark('step 2: bundle installed, control plane rolled out');
      await restartApps();
      mark('step 2: workloads restarted');
      const bundled = await proxyAnchors();
      expect(
        bundled.every(
          (a) =>
            a.includes(readFileSync(next.caCrt, 'utf8').trim()) && a.includes(readFileSync(certs.caCrt, 'utf8').trim()),
        ),
      ).toBe(true);
      // 3. Sign with the new issuer; wait until every leaf is from it.
      const reloads = await issuerReloads();
      await upgrade(
        '--set-file',
        `identity.issuer.tls.crtPEM=${next.issuerCrt}`,
        '--set-file',
        `identity.issuer.tls.keyPEM=${next.issuerKey}`,
      );
      await eventually('identity reloaded the new issuer', 120_000, async () => (await issuerReloads()) > reloads);
      await everyProxyRenewedAfter(Date.now());
      mark('step 3: every proxy renewed from the new issuer');
      // 4. Drop the old root; restart the workloads.
      await upgrade('--set-file', `identityTrustAnchorsPEM=${next.caCrt}`);
      await rolledOut(m.cpNs);
      mark('step 4: old root dropped, control plane rolled out');
      await restartApps();
      mark('step 4: workloads restarted');
      const anchors = await proxyAnchors();
      expect(anchors.every((a) => a.trim() === readFileSync(next.caCrt, 'utf8').trim())).toBe(true);
      return `4 steps of docs/certificates.md; every proxy now trusts only the new root`;
    });
    expect(row.failures).toEqual([]);
  }, 600_000);

  it('d. kube-apiserver restarted (watch streams cut): 0 failed requests', async () => {
    const row = await measure('kube-apiserver restarted (watch streams cut)', () => driver.restartApiServer());
    expect(row.failures).toEqual([]);
  }, 400_000);

  it('e. a server pod killed mid-stream: only requests already sent to it fail', async () => {
    const [victim] = await ready(m.appNs, 'server', 2);
    let killedAt = 0;
    const row = await measure('server pod killed mid-stream (SIGKILL, 1 of 2)', async () => {
      const name = victim!.metadata.name;
      const restarts = async () => {
        const p = await kubectlJson<Pod>(driver, ['get', 'pod', '-n', m.appNs, name]);
        const all = [...(p.status.initContainerStatuses ?? []), ...(p.status.containerStatuses ?? [])] as Array<{
          restartCount?: number;
        }>;
        return { n: all.reduce((sum, c) => sum + (c.restartCount ?? 0), 0), ready: isReady(p) };
      };
      const before = (await restarts()).n;
      mark('kill starts');
      const what = await driver.killPodProcesses(m.appNs, name);
      killedAt = Date.now();
      mark('kill done');
      // Back: the kubelet restarted its containers and the pod is ready again.
      await eventually(`${name} restarted and ready`, 180_000, async () => {
        const r = await restarts();
        return r.n > before && r.ready;
      });
      await ready(m.appNs, 'server', 2);
      return `${what}; restarted by the kubelet, ready again`;
    });
    // In flight: sent before the client's side could know the pod was gone, i.e. before the first
    // failure came back (the connection's reset). Nothing sent after that may fail.
    const learned = Math.min(...row.failures.map((f) => f.at));
    const late = row.failures.filter((f) => f.sent >= learned);
    const afterKill = row.failures.filter((f) => f.sent > killedAt).length;
    row.note += `; in flight (sent before the first failure came back): ${row.failed - late.length}, of which ${afterKill} sent in the ms between the kill and the reset reaching the client; sent after: ${late.length}`;
    expect(late).toEqual([]);
  }, 400_000);
});
