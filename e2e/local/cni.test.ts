// Issue 28, CNI mode on the local cluster's real node (kubelet, containerd, Debian's bridge plugin):
// the chart with cni.enabled=true puts minimesh-cni at the end of the node's conflist; a namespace
// that enforces Pod Security "restricted" admits a meshed server and two meshed clients (no NET_ADMIN
// anywhere in them); their traffic is mTLS with the client's identity seen by the server's proxy, an
// AuthorizationPolicy admits one client and refuses the other, `minimesh explain` reads the rules the
// plugin wrote, `minimesh check` knows the DaemonSet and the chained conflist; the installer re-chains
// when the conflist is rewritten; without the plugin a new meshed pod fails its network validator with
// the message, and recovers once the plugin is back; uninstalling leaves the conflist as it was.
// Local driver only: it reads and rewrites the node's CNI files (the k3d node's are inside Docker).
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureCluster, type ClusterInfo } from '@minimesh/local-cluster';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalDriver } from '../drivers/local.js';
import type { CertFiles } from '../src/certs.js';
import type { K8sObject } from '../src/chart.js';
import {
  applyObjects,
  createMeshCerts,
  describePods,
  eventually,
  identityOf,
  installChart,
  kubectlJson,
  listPods,
  metricLines,
  parseClientLines,
  proxyMetrics,
  SERVER_HTTP_PORT,
  type MeshSetup,
  type Pod,
} from '../src/mesh.js';
import { CONTROL_PLANE, echoServer, httpClient, meshedNamespace, readyPod, readyPods } from '../src/apps.js';
import { parseCanIList } from '../src/rbac.js';
import { cliMain, run } from '../src/tools.js';

const driver = createLocalDriver();
const suffix = randomBytes(3).toString('hex');
const m: MeshSetup = {
  driver,
  cpNs: `minimesh-cni-${suffix}`,
  appNs: `mm-cni-app-${suffix}`,
  release: 'minimesh',
  scopeWebhook: true,
};
const G = 'policy.minimesh.io';
const ROLLOUT_MS = 150_000;
let cluster: ClusterInfo;
let tmp = '';
let certs: CertFiles;
let conflistPath = '';
let originalConflist = '';
let server: Pod;
let client: Pod;

const restricted = {
  pod: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
  container: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
};

function appObjects(): K8sObject[] {
  // Pods that pass Pod Security "restricted" on their own (the fixtures run as uid 65534).
  const o = {
    graceSeconds: 2,
    podSpec: { securityContext: restricted.pod },
    containerDefaults: { securityContext: restricted.container },
  };
  const url = `http://server.${m.appNs}.svc.cluster.local:${SERVER_HTTP_PORT}/`;
  return [
    meshedNamespace(m, {
      labels: {
        'pod-security.kubernetes.io/enforce': 'restricted',
        'pod-security.kubernetes.io/enforce-version': 'latest',
      },
    }),
    ...echoServer(m, o),
    ...httpClient(m, 'client', url, o),
    ...httpClient(m, 'other', url, o),
    {
      apiVersion: `${G}/v1beta3`,
      kind: 'Server',
      metadata: { name: 'server-http', namespace: m.appNs },
      spec: { podSelector: { matchLabels: { app: 'server' } }, port: 'http', proxyProtocol: 'HTTP/1' },
    },
    {
      apiVersion: `${G}/v1alpha1`,
      kind: 'AuthorizationPolicy',
      metadata: { name: 'client-only', namespace: m.appNs },
      spec: {
        targetRef: { group: G, kind: 'Server', name: 'server-http' },
        requiredAuthenticationRefs: [{ kind: 'ServiceAccount', name: 'client' }],
      },
    },
  ];
}

const cniValues = () => [
  'cni.enabled=true',
  `cni.binDir=${cluster.cniBinDir}`,
  `cni.confDir=${cluster.cniConfDir}`,
  `cni.stateDir=${join(cluster.dir, 'cni', 'minimesh-cni-state')}`,
  'cni.image.pullPolicy=Never',
  'cni.resync=2s',
];

async function daemonSetReady(): Promise<void> {
  await eventually('the minimesh-cni DaemonSet is ready', ROLLOUT_MS, async () => {
    const ds = await kubectlJson<{ status?: { numberReady?: number; desiredNumberScheduled?: number } }>(driver, [
      'get',
      'daemonset',
      'minimesh-cni',
      '-n',
      m.cpNs,
    ]);
    return (ds.status?.desiredNumberScheduled ?? 0) > 0 && ds.status?.numberReady === ds.status?.desiredNumberScheduled;
  }).catch(async (err: Error) => {
    throw new Error(`${err.message}\n${await describePods(driver, m.cpNs)}`);
  });
}

const pluginEntries = () =>
  (JSON.parse(readFileSync(conflistPath, 'utf8')) as { plugins: { type: string }[] }).plugins.map((p) => p.type);

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return run(process.execPath, [cliMain, ...args, ...driver.kubeArgs()], { timeoutMs: 120_000 });
}

beforeAll(async () => {
  await driver.setup();
  cluster = await ensureCluster();
  const conf = readdirSync(cluster.cniConfDir)
    .filter((f) => /\.(conflist|conf|json)$/.test(f))
    .sort()[0];
  if (!conf) throw new Error(`no CNI configuration in ${cluster.cniConfDir}`);
  conflistPath = join(cluster.cniConfDir, conf);
  originalConflist = readFileSync(conflistPath, 'utf8');
  if (originalConflist.includes('minimesh-cni'))
    throw new Error(
      `${conflistPath} already chains minimesh-cni (an earlier run left it): npm run cluster -- down, then up`,
    );
  tmp = mkdtempSync(join(tmpdir(), 'mm-cni-e2e-'));
  certs = await createMeshCerts(tmp);
  await installChart({ ...m, sets: cniValues() }, certs);
  await daemonSetReady();
  for (const c of CONTROL_PLANE) await readyPods(m, c, { controlPlane: true, timeoutMs: ROLLOUT_MS });
  await applyObjects(driver, appObjects());
  server = await readyPod(m, 'server', { timeoutMs: ROLLOUT_MS });
  client = await readyPod(m, 'client', { timeoutMs: ROLLOUT_MS });
}, 600_000);

afterAll(async () => {
  if (process.env.MINIMESH_E2E_KEEP) return;
  await driver.kubectl(['delete', 'namespace', m.appNs, '--wait=false', '--ignore-not-found']).catch(() => undefined);
  await driver.helm(['uninstall', m.release, '-n', m.cpNs, '--wait', '--timeout', '60s']).catch(() => undefined);
  await driver.kubectl(['delete', 'namespace', m.cpNs, '--wait=false', '--ignore-not-found']).catch(() => undefined);
  // Never leave the node's conflist changed for the next spec, whatever failed above.
  if (conflistPath && originalConflist && readFileSync(conflistPath, 'utf8') !== originalConflist)
    writeFileSync(conflistPath, originalConflist);
  if (tmp) rmSync(tmp, { recursive: true, force: true });
}, 120_000);

describe('CNI mode on the local node', () => {
  it('the installer put the plugin in the node’s bin dir and chained it last in the conflist', () => {
    expect(pluginEntries()).toEqual(['bridge', 'portmap', 'minimesh-cni']);
    expect(existsSync(join(cluster.cniBinDir, 'minimesh-cni'))).toBe(true);
    expect(existsSync(join(cluster.cniConfDir, 'minimesh-cni-kubeconfig'))).toBe(true);
  });

  it('the plugin’s service account may get pods and nothing else', async () => {
    const r = await driver.kubectl(['auth', 'can-i', '--list', '--as', `system:serviceaccount:${m.cpNs}:minimesh-cni`]);
    expect(r.code, r.stderr).toBe(0);
    expect(parseCanIList(r.stdout)).toEqual(['pods get']);
  });

  it('a namespace enforcing Pod Security "restricted" admits the meshed pods: the validator instead of proxy-init', async () => {
    for (const p of [server, client]) {
      const inits = p.spec.initContainers ?? [];
      expect(inits.map((c) => c.name)).toEqual(['minimesh-network-validator', 'minimesh-proxy']);
      for (const c of [...inits, ...p.spec.containers])
        expect((c.securityContext?.capabilities as { add?: string[] } | undefined)?.add ?? []).toEqual([]);
      expect(p.metadata.annotations?.['minimesh.io/proxy-init-args']).toContain('--proxy-uid');
    }
    const log = await driver.logs(m.appNs, client.metadata.name, 'minimesh-network-validator');
    expect(log).toMatch(
      /traffic is redirected: a connection to 192\.0\.2\.2:20001 reached 127\.0\.0\.1:4140 in \d+ ms/,
    );
    console.log(`validator: ${log.trim()}`);
    // The same pod with proxy-init (init-container mode) is refused by the namespace's Pod Security.
    const withInit = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'with-proxy-init', namespace: m.appNs },
      spec: {
        securityContext: restricted.pod,
        initContainers: [
          {
            name: 'minimesh-init',
            image: 'ghcr.io/minimesh/proxy-init:0.1.0',
            securityContext: {
              ...restricted.container,
              capabilities: { add: ['NET_ADMIN', 'NET_RAW'], drop: ['ALL'] },
              runAsUser: 0,
              runAsNonRoot: false,
            },
          },
        ],
        containers: [{ name: 'app', image: driver.fixtureImage('http-echo'), securityContext: restricted.container }],
      },
    };
    const dry = await driver.kubectl(
      ['apply', '--dry-run=server', '-f', '-'],
      JSON.stringify({
        ...withInit,
        metadata: { ...withInit.metadata, annotations: { 'minimesh.io/inject': 'disabled' } },
      }),
    );
    expect(dry.code).not.toBe(0);
    expect(dry.stderr).toMatch(/violates PodSecurity "restricted:latest"/);
  }, 60_000);

  it("carries the client's requests over mTLS: the server's proxy sees the client's identity", async () => {
    const clientId = identityOf('client', m.appNs, m.cpNs);
    await eventually('client requests answered 200', 60_000, async () => {
      const lines = parseClientLines(await driver.logs(m.appNs, client.metadata.name, 'http'));
      return lines.filter((l) => l.status === 200).length >= 3;
    });
    const text = await eventually('the server proxy counts mTLS requests from the client', 60_000, async () => {
      const t = await proxyMetrics(driver, m.appNs, server.metadata.name);
      return metricLines(t, 'request_total', { direction: 'inbound', tls: 'true', client_id: clientId }).length > 0
        ? t
        : undefined;
    });
    console.log(metricLines(text, 'request_total', { direction: 'inbound', client_id: clientId })[0]);
  }, 150_000);

  it('enforces the AuthorizationPolicy: the other client’s requests are refused with 403', async () => {
    const other = (await listPods(driver, m.appNs, 'app=other'))[0] as Pod;
    await eventually('the other client gets 403', 60_000, async () => {
      const lines = parseClientLines(await driver.logs(m.appNs, other.metadata.name, 'http'));
      return lines.filter((l) => l.status === 403).length >= 3;
    });
    const lines = parseClientLines(await driver.logs(m.appNs, client.metadata.name, 'http'));
    expect(lines.slice(-3).every((l) => l.status === 200)).toBe(true);
  }, 90_000);

  it('minimesh explain reads the rules the plugin wrote', async () => {
    const r = await cli([
      'explain',
      `${m.appNs}/${client.metadata.name}`,
      '--to',
      `server.${m.appNs}:${SERVER_HTTP_PORT}`,
      '--control-plane-namespace',
      m.cpNs,
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /\(nat rules from minimesh-cni's record on node \S+ \(installer minimesh-cni-\S+\): the table it read back right after writing the rules at \S+, iptables mode nft\)/,
    );
    expect(r.stdout).toContain('PROXY_INIT_OUTPUT');
    expect(r.stdout).toMatch(/4140/);
    console.log(r.stdout.split('\n').slice(0, 12).join('\n'));
  }, 150_000);

  it('minimesh check knows CNI mode: the DaemonSet ready on every node, the conflist chained', async () => {
    const r = await cli(['check', '-n', m.cpNs, '-o', 'json']);
    const results = (
      JSON.parse(r.stdout) as { results: { category: string; description: string; status: string; detail?: string }[] }
    ).results;
    const cni = results.filter((x) => x.category === 'minimesh-cni');
    expect(cni.map((x) => `${x.status} ${x.description}`)).toEqual([
      'ok the minimesh-cni DaemonSet is ready on every node',
      `ok node ${cluster.nodeName}: the conflist chains minimesh-cni`,
    ]);
    expect(cni[1]?.detail).toContain(`last in ${conflistPath}`);
    const pre = await cli(['check', '--pre', '-n', `minimesh-pre-${suffix}`, '-o', 'json']);
    const psa = (
      JSON.parse(pre.stdout) as { results: { description: string; status: string; detail?: string; hint?: string }[] }
    ).results.find((x) => x.description === 'meshed pods are admitted where Pod Security is enforced');
    expect(psa).toMatchObject({ status: 'warn', hint: expect.stringContaining('--set cni.enabled=true') });
    expect(psa?.detail).toContain(`${m.appNs} (restricted)`);
  }, 300_000);

  it('puts itself back when the cluster’s CNI rewrites the conflist', async () => {
    writeFileSync(conflistPath, originalConflist);
    await eventually('minimesh-cni chained again', 30_000, async () => pluginEntries().at(-1) === 'minimesh-cni', 200);
  }, 60_000);

  it('without the plugin, a new meshed pod fails its network validator with the message; it recovers once the plugin is back', async () => {
    await driver.kubectl(['delete', 'daemonset', 'minimesh-cni', '-n', m.cpNs, '--wait=true', '--timeout=60s']);
    await eventually(
      'the installer took itself out of the conflist',
      60_000,
      async () => readFileSync(conflistPath, 'utf8') === originalConflist,
    );
    expect(existsSync(join(cluster.cniBinDir, 'minimesh-cni'))).toBe(false);
    // A pod scheduled now: admitted and injected in CNI mode, but nothing writes its rules.
    await driver.kubectl(['scale', 'deployment', 'other', '-n', m.appNs, '--replicas=0']);
    await driver.kubectl(['scale', 'deployment', 'other', '-n', m.appNs, '--replicas=1']);
    const failed = await eventually('the new pod’s validator fails', 90_000, async () => {
      const pods = await listPods(driver, m.appNs, 'app=other');
      for (const p of pods) {
        const st = (p.status.initContainerStatuses ?? []).find((s) => s.name === 'minimesh-network-validator') as
          | {
              state?: { terminated?: { exitCode: number; message?: string } };
              lastState?: { terminated?: { exitCode: number; message?: string } };
            }
          | undefined;
        const t = st?.state?.terminated ?? st?.lastState?.terminated;
        if (t && t.exitCode !== 0) return { pod: p, message: t.message ?? '' };
      }
      return undefined;
    });
    expect(failed.message).toContain(
      "minimesh-network-validator: this pod's traffic is not redirected to the proxy: a connection to 192.0.2.2:20001 did not reach 127.0.0.1:4140",
    );
    expect(failed.message).toContain(`kubectl -n ${m.cpNs} get daemonset minimesh-cni`);
    console.log(`validator without the plugin: ${failed.message.trim()}`);
    // The plugin back (helm restores the DaemonSet), the pod deleted as the message says: it starts.
    await installChart({ ...m, sets: cniValues() }, certs);
    await daemonSetReady();
    await driver.kubectl(['delete', 'pod', failed.pod.metadata.name, '-n', m.appNs, '--wait=false']);
    await readyPod(m, 'other', { timeoutMs: ROLLOUT_MS });
  }, 600_000);

  it('helm uninstall leaves the node’s conflist as it was', async () => {
    const r = await driver.helm(['uninstall', m.release, '-n', m.cpNs, '--wait', '--timeout', '90s']);
    expect(r.code, r.stderr).toBe(0);
    await eventually(
      'the conflist is back to what the cluster wrote',
      60_000,
      async () => readFileSync(conflistPath, 'utf8') === originalConflist,
    );
    expect(existsSync(join(cluster.cniBinDir, 'minimesh-cni'))).toBe(false);
    expect(readdirSync(cluster.cniConfDir).sort()).toEqual([conflistPath.slice(conflistPath.lastIndexOf('/') + 1)]);
  }, 180_000);
});
