// Integration as root on a virtual node made here: a node network namespace with a bridge, "pods" as
// namespaces on it, each meshed pod with proxy-init's real rules and the proxy running as uid 2102,
// and the REAL identity and destination programs (on the host's loopback) against the local cluster's
// real API server. The proxies reach the control plane through unix sockets (they cross network
// namespaces), bridged by this process to 127.0.0.1:<port>. Pods are API objects (schedulerName none,
// status patched by the test), Services are selector-less with EndpointSlices written here.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callAgent } from './support/pod-agent.js';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Server } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import {
  adminClient,
  createNamespace,
  createServiceAccountToken,
  ensureCluster,
  type ClusterInfo,
} from '@minimesh/local-cluster';
import { createTestPki, type TestPki } from './support/pki.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const PROXY = join(ROOT, 'packages/proxy/dist/main.js');
const PROXY_INIT = join(ROOT, 'packages/proxy-init/dist/main.js');
const IDENTITY = join(ROOT, 'packages/identity/dist/main.js');
const DESTINATION = join(ROOT, 'packages/destination/dist/main.js');
const AGENT = join(ROOT, 'packages/proxy/test/apps/pod-agent.mjs');
const OPAQUE = '25,587,3306,4444,5432,6379,9300,11211';

const R = randomBytes(2).toString('hex');
const octet = 100 + (parseInt(R, 16) % 100);
const SUBNET = `172.31.${octet}`;
const NODE_NS = `mm-px-${R}-node`;
const BRIDGE = `mmpx${R}br`;
const KNS = `mm-px-${R}`;
const TRUST_DOMAIN = 'cluster.local';
const idOf = (sa: string) => `${sa}.${KNS}.serviceaccount.identity.${KNS}.${TRUST_DOMAIN}`;
const asRoot = process.getuid?.() === 0;

interface PodSpec {
  name: string;
  ip: string;
  sa: string;
  meshed: boolean;
}
const PODS: PodSpec[] = [
  { name: 'a', ip: `${SUBNET}.10`, sa: 'client', meshed: true },
  { name: 'b1', ip: `${SUBNET}.11`, sa: 'web', meshed: true },
  { name: 'b2', ip: `${SUBNET}.12`, sa: 'web', meshed: true },
  { name: 'u', ip: `${SUBNET}.13`, sa: 'default', meshed: false },
];
const netnsOf = (pod: string) => `mm-px-${R}-${pod}`;

let dir: string;
let cluster: ClusterInfo;
let pki: TestPki;
const procs = new Map<string, ChildProcess>();
const bridges: Server[] = [];
const clusterIps: Record<string, string> = {};

function sh(argv: string[], opts: { allowFail?: boolean } = {}): string {
  const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8' });
  if (r.status !== 0 && !opts.allowFail) throw new Error(`${argv.join(' ')} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}

function startProc(key: string, argv: string[], env: Record<string, string> = {}): ChildProcess {
  const child = spawn(argv[0]!, argv.slice(1), { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
  child.stderr!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
  (child as ChildProcess & { log: () => string }).log = () => log;
  procs.set(key, child);
  return child;
}

function logOf(key: string): string {
  return (procs.get(key) as (ChildProcess & { log?: () => string }) | undefined)?.log?.() ?? '';
}

async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 20_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v as T;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

/** A unix socket (crosses network namespaces) piped to 127.0.0.1:port on the host. */
async function unixBridge(path: string, port: number): Promise<void> {
  const s = createServer((c) => {
    const up = connect(port, '127.0.0.1');
    c.pipe(up).pipe(c);
    c.on('error', () => up.destroy());
    up.on('error', () => c.destroy());
  });
  await new Promise<void>((r) => s.listen(path, () => r()));
  chmodSync(path, 0o777);
  bridges.push(s);
}

/** Calls the client agent in pod a. */
function agent<T = unknown>(op: string, body: unknown): Promise<T> {
  return callAgent<T>(join(dir, 'agent.sock'), op, body);
}

/** GET inside a pod's namespace (e.g. its proxy's admin on 127.0.0.1:4191). */
function podFetch(pod: string, url: string): { status: number; body: string } {
  const out = sh([
    'ip',
    'netns',
    'exec',
    netnsOf(pod),
    process.execPath,
    '-e',
    `fetch(${JSON.stringify(url)}).then(async r=>process.stdout.write(JSON.stringify({status:r.status,body:await r.text()}))).catch(e=>process.stdout.write(JSON.stringify({status:0,body:String(e)})))`,
  ]);
  return JSON.parse(out) as { status: number; body: string };
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

async function kube(method: string, path: string, body?: unknown, contentType?: string): Promise<unknown> {
  return adminClient().request(method, path, body, contentType);
}

function startProxy(pod: PodSpec): void {
  const token = join(dir, `token-${pod.name}`);
  startProc(
    `proxy-${pod.name}`,
    [
      'ip',
      'netns',
      'exec',
      netnsOf(pod.name),
      'setpriv',
      '--reuid',
      '2102',
      '--regid',
      '2102',
      '--clear-groups',
      process.execPath,
      PROXY,
    ],
    {
      MINIMESH_PROXY_LOG: 'info',
      MINIMESH_PROXY_LOG_FORMAT: 'json',
      MINIMESH_PROXY_IDENTITY_LOCAL_NAME: idOf(pod.sa),
      MINIMESH_PROXY_IDENTITY_TRUST_ANCHORS: pki.anchorPem,
      MINIMESH_PROXY_IDENTITY_TOKEN_FILE: token,
      MINIMESH_PROXY_IDENTITY_SVC_ADDR: `unix:${join(dir, 'identity.sock')}`,
      MINIMESH_PROXY_DESTINATION_SVC_ADDR: `unix:${join(dir, 'destination.sock')}`,
      MINIMESH_PROXY_DESTINATION_CONTEXT: JSON.stringify({ ns: KNS, nodeName: 'mm-px-node', pod: pod.name }),
      MINIMESH_PROXY_INBOUND_IPS: pod.ip,
      MINIMESH_PROXY_INBOUND_PORTS_DISABLE_PROTOCOL_DETECTION: OPAQUE,
      MINIMESH_PROXY_SHUTDOWN_GRACE_PERIOD: '1s',
    },
  );
}

beforeAll(async () => {
  if (!asRoot) throw new Error('the proxy integration test runs as root (network namespaces, iptables, setpriv)');
  for (const f of [PROXY, PROXY_INIT, IDENTITY, DESTINATION])
    if (!existsSync(f)) throw new Error(`${f} is missing: build the packages first (npm run build)`);
  dir = mkdtempSync('/tmp/mm-px-');
  chmodSync(dir, 0o755);
  cluster = await ensureCluster();
  pki = await createTestPki(TRUST_DOMAIN);

  // --- the virtual node: a namespace with a bridge, pods as namespaces on it ---
  sh(['ip', 'netns', 'add', NODE_NS]);
  sh(['ip', '-n', NODE_NS, 'link', 'set', 'lo', 'up']);
  sh(['ip', '-n', NODE_NS, 'link', 'add', BRIDGE, 'type', 'bridge']);
  sh(['ip', '-n', NODE_NS, 'addr', 'add', `${SUBNET}.1/24`, 'dev', BRIDGE]);
  sh(['ip', '-n', NODE_NS, 'link', 'set', BRIDGE, 'up']);
  for (const [i, pod] of PODS.entries()) {
    const ns = netnsOf(pod.name);
    const inner = `mmpx${R}p${i}`;
    const outer = `mmpx${R}n${i}`;
    sh(['ip', 'netns', 'add', ns]);
    sh(['ip', '-n', ns, 'link', 'set', 'lo', 'up']);
    sh(['ip', 'link', 'add', inner, 'netns', ns, 'type', 'veth', 'peer', 'name', outer, 'netns', NODE_NS]);
    sh(['ip', '-n', NODE_NS, 'link', 'set', outer, 'master', BRIDGE, 'up']);
    sh(['ip', '-n', ns, 'addr', 'add', `${pod.ip}/24`, 'dev', inner]);
    sh(['ip', '-n', ns, 'link', 'set', inner, 'up']);
    sh(['ip', '-n', ns, 'route', 'add', 'default', 'via', `${SUBNET}.1`]);
  }

  // --- API objects: namespace, pods (owned by this test), selector-less services with slices ---
  await createNamespace(KNS);
  for (const sa of ['client', 'web']) {
    const token = await createServiceAccountToken({
      namespace: KNS,
      serviceAccount: sa,
      audiences: ['identity.minimesh.io'],
    });
    for (const pod of PODS.filter((p) => p.sa === sa)) {
      writeFileSync(join(dir, `token-${pod.name}`), token);
      chmodSync(join(dir, `token-${pod.name}`), 0o644);
    }
  }
  const podObjects = [...PODS, { name: 'imp', ip: PODS[3]!.ip, sa: 'web', meshed: true }];
  for (const pod of podObjects) {
    await kube('POST', `/api/v1/namespaces/${KNS}/serviceaccounts`, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: pod.sa },
    }).catch(() => undefined);
    await kube('POST', `/api/v1/namespaces/${KNS}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: pod.name,
        labels: { app: pod.name, ...(pod.meshed ? { 'minimesh.io/control-plane-ns': KNS } : {}) },
      },
      spec: {
        schedulerName: 'none',
        serviceAccountName: pod.sa,
        containers: [{ name: 'app', image: 'busybox', command: ['sleep', '3600'] }],
      },
    });
    await kube(
      'PATCH',
      `/api/v1/namespaces/${KNS}/pods/${pod.name}/status`,
      {
        status: {
          phase: 'Running',
          podIP: pod.ip,
          podIPs: [{ ip: pod.ip }],
          conditions: [
            { type: 'Ready', status: 'True' },
            { type: 'ContainersReady', status: 'True' },
          ],
        },
      },
      'application/merge-patch+json',
    );
  }
  const service = async (
    name: string,
    ports: Array<{ name: string; port: number; targetPort: number }>,
    pods: string[],
  ) => {
    const svc = (await kube('POST', `/api/v1/namespaces/${KNS}/services`, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name },
      spec: { ports: ports.map((p) => ({ ...p, protocol: 'TCP' })) },
    })) as { spec: { clusterIP: string } };
    clusterIps[name] = svc.spec.clusterIP;
    await writeSlice(name, ports, pods);
  };
  await service(
    'web',
    [
      { name: 'http', port: 80, targetPort: 8080 },
      { name: 'grpc', port: 81, targetPort: 8081 },
      { name: 'smtp', port: 25, targetPort: 25 },
      { name: 'echo', port: 9000, targetPort: 9000 },
    ],
    ['b1', 'b2'],
  );
  await service('plain', [{ name: 'http', port: 80, targetPort: 8080 }], ['u']);
  // A Service whose one endpoint is the client pod itself (a pod calling its own Service).
  await service('self', [{ name: 'http', port: 80, targetPort: 8080 }], ['a']);
  await service('impostor', [{ name: 'http', port: 80, targetPort: 8443 }], ['imp']);

  // --- the real control plane on the host's loopback ---
  mkdirSync(join(dir, 'issuer'));
  writeFileSync(join(dir, 'issuer', 'crt.pem'), pki.issuerPem);
  writeFileSync(join(dir, 'issuer', 'key.pem'), pki.issuerKeyPem);
  writeFileSync(join(dir, 'ca.crt'), pki.anchorPem);
  const idPort = await freePort();
  const dstPort = await freePort();
  startProc('identity', [
    process.execPath,
    IDENTITY,
    '--addr',
    `127.0.0.1:${idPort}`,
    '--admin-addr',
    `127.0.0.1:${await freePort()}`,
    '--issuer-dir',
    join(dir, 'issuer'),
    '--trust-anchors',
    join(dir, 'ca.crt'),
    '--trust-domain',
    TRUST_DOMAIN,
    '--controller-namespace',
    KNS,
    '--issuance-lifetime',
    '40s',
    '--clock-skew-allowance',
    '1s',
    '--kubeconfig',
    cluster.kubeconfigPath,
  ]);
  const startDestination = () =>
    startProc('destination', [
      process.execPath,
      DESTINATION,
      '--addr',
      `127.0.0.1:${dstPort}`,
      '--admin-addr',
      `127.0.0.1:${0}`,
      '--controller-namespace',
      KNS,
      '--identity-trust-domain',
      TRUST_DOMAIN,
      '--kubeconfig',
      cluster.kubeconfigPath,
      '--lease-name',
      `mm-px-${R}`,
    ]);
  startDestination();
  await unixBridge(join(dir, 'identity.sock'), idPort);
  await unixBridge(join(dir, 'destination.sock'), dstPort);
  await waitFor(
    'identity and destination to listen',
    async () => (await canConnect(idPort)) && (await canConnect(dstPort)),
    30_000,
  );

  // --- pods: proxy-init's real rules, the proxy as uid 2102, the apps ---
  for (const pod of PODS.filter((p) => p.meshed)) {
    sh([
      'ip',
      'netns',
      'exec',
      netnsOf(pod.name),
      process.execPath,
      PROXY_INIT,
      '--incoming-proxy-port',
      '4143',
      '--outgoing-proxy-port',
      '4140',
      '--proxy-uid',
      '2102',
      '--inbound-ports-to-ignore',
      '4190,4191',
      '--outbound-ports-to-ignore',
      '443,6443',
      '--ipv6=false',
    ]);
    startProxy(pod);
  }
  for (const pod of ['a', 'b1', 'b2', 'u'])
    startProc(`app-${pod}`, ['ip', 'netns', 'exec', netnsOf(pod), process.execPath, AGENT, 'server', pod]);
  const evil = await pki.leaf(`evil.${KNS}.serviceaccount.identity.${KNS}.${TRUST_DOMAIN}`);
  writeFileSync(join(dir, 'evil.crt'), evil.certPem);
  writeFileSync(join(dir, 'evil.key'), evil.keyPem);
  startProc('app-imp', [
    'ip',
    'netns',
    'exec',
    netnsOf('u'),
    process.execPath,
    AGENT,
    'impostor',
    join(dir, 'evil.crt'),
    join(dir, 'evil.key'),
  ]);
  startProc('agent', ['ip', 'netns', 'exec', netnsOf('a'), process.execPath, AGENT, 'client', join(dir, 'agent.sock')]);
  await waitFor('the client agent', () => existsSync(join(dir, 'agent.sock')));
  for (const pod of PODS.filter((p) => p.meshed)) {
    await waitFor(
      `proxy in ${pod.name} to be ready (log: ${logOf(`proxy-${pod.name}`).slice(-500)})`,
      () => podFetch(pod.name, 'http://127.0.0.1:4191/ready').status === 200,
      20_000,
    );
  }
}, 300_000);

async function writeSlice(
  name: string,
  ports: Array<{ name: string; targetPort: number }>,
  pods: string[],
): Promise<void> {
  const all = [...PODS, { name: 'imp', ip: PODS[3]!.ip }];
  const body = {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: `${name}-slice`,
      labels: { 'kubernetes.io/service-name': name, 'endpointslice.kubernetes.io/managed-by': 'mm-px-test' },
    },
    addressType: 'IPv4',
    endpoints: pods.map((p) => ({
      addresses: [all.find((x) => x.name === p)!.ip],
      conditions: { ready: true },
      targetRef: { kind: 'Pod', name: p, namespace: KNS },
    })),
    ports: ports.map((p) => ({ name: p.name, port: p.targetPort, protocol: 'TCP' })),
  };
  const existing = await adminClient().get(`/apis/discovery.k8s.io/v1/namespaces/${KNS}/endpointslices/${name}-slice`);
  if (existing)
    await kube('PUT', `/apis/discovery.k8s.io/v1/namespaces/${KNS}/endpointslices/${name}-slice`, {
      ...body,
      metadata: {
        ...body.metadata,
        resourceVersion: (existing as { metadata: { resourceVersion: string } }).metadata.resourceVersion,
      },
    });
  else await kube('POST', `/apis/discovery.k8s.io/v1/namespaces/${KNS}/endpointslices`, body);
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.on('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

afterAll(async () => {
  for (const [, p] of procs) {
    try {
      p.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  for (const b of bridges) b.close();
  for (const pod of PODS) sh(['ip', 'netns', 'del', netnsOf(pod.name)], { allowFail: true });
  sh(['ip', 'netns', 'del', NODE_NS], { allowFail: true });
  if (cluster) await kube('DELETE', `/api/v1/namespaces/${KNS}`).catch(() => undefined);
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

const WEB = () => `web.${KNS}.svc.cluster.local`;
type H1 = { status: number; headers: Record<string, string>; body: string; error?: string };

describe('proxy in network namespaces with the real control plane', () => {
  it('/ready latched on every meshed proxy once identity issued a certificate', () => {
    for (const pod of ['a', 'b1', 'b2']) {
      expect(podFetch(pod, 'http://127.0.0.1:4191/ready').status).toBe(200);
      expect(podFetch(pod, 'http://127.0.0.1:4191/metrics').body).toMatch(
        /control_identity_cert_refreshes_total\{result="ok"\} [1-9]/,
      );
    }
  });

  it('HTTP/1.1 keep-alive: meshed → meshed is mTLS, load spreads, the server side sees the client identity', async () => {
    const rs = await agent<H1[]>('h1', {
      ip: clusterIps.web,
      port: 80,
      host: WEB(),
      n: 60,
      parallel: 4,
      agentKey: 'web',
    });
    expect(rs.every((r) => r.status === 200)).toBe(true);
    const apps = rs.map((r) => (JSON.parse(r.body) as { app: string }).app);
    expect(apps.filter((a) => a === 'b1').length).toBeGreaterThan(5);
    expect(apps.filter((a) => a === 'b2').length).toBeGreaterThan(5);
    const body = JSON.parse(rs[0]!.body) as { headers: Record<string, string>; httpVersion: string };
    expect(body.headers['l5d-client-id']).toBe(idOf('client'));
    expect(body.httpVersion).toBe('1.1');
    const m = podFetch('b1', 'http://127.0.0.1:4191/metrics').body;
    expect(m).toMatch(
      new RegExp(
        `request_total\\{direction="inbound"[^}]*tls="true",client_id="${idOf('client').replace(/\./g, '\\.')}"`,
      ),
    );
    const out = podFetch('a', 'http://127.0.0.1:4191/metrics').body;
    expect(out).toMatch(
      new RegExp(
        `response_total\\{direction="outbound",authority="${WEB().replace(/\./g, '\\.')}:80"[^}]*tls="true"[^}]*server_id="${idOf('web').replace(/\./g, '\\.')}"[^}]*dst_namespace="${KNS}"`,
      ),
    );
  });

  it('HTTP/2 and gRPC (unary and streaming) pass as HTTP/2 with trailers', async () => {
    const h2 = await agent<{ body: string; error?: string }>('h2', {
      ip: clusterIps.web,
      port: 81,
      authority: `${WEB()}:81`,
      path: '/x',
    });
    expect(h2.error).toBeUndefined();
    expect(JSON.parse(h2.body).headers['l5d-client-id']).toBe(idOf('client'));
    const unary = await agent<{ body: string; trailers: Record<string, string> }>('h2', {
      ip: clusterIps.web,
      port: 81,
      authority: `${WEB()}:81`,
      path: '/test.Echo/Unary',
      grpc: true,
      messages: ['ping'],
    });
    expect(unary.body.slice(5)).toBe('ping');
    expect(unary.trailers['grpc-status']).toBe('0');
    const stream = await agent<{ body: string; trailers: Record<string, string> }>('h2', {
      ip: clusterIps.web,
      port: 81,
      authority: `${WEB()}:81`,
      path: '/test.Echo/Stream',
      grpc: true,
      messages: ['a', 'bb', 'ccc'],
    });
    expect(stream.body.length).toBe(21);
    expect(stream.trailers['grpc-status']).toBe('0');
  });

  it('WebSocket (HTTP/1 Upgrade) is tunnelled', async () => {
    const ws = await agent<{ buf: string; error?: string }>('ws', { ip: clusterIps.web, port: 80, host: WEB() });
    expect(ws.error).toBeUndefined();
    expect(ws.buf).toMatch(/^HTTP\/1.1 101/);
    expect(ws.buf).toContain('echo:frame-1');
  });

  it('a server-speaks-first protocol on an opaque port answers without a detection delay', async () => {
    const r = await agent<{ buf: string; firstByteMs: number; error?: string }>('tcp', {
      ip: clusterIps.web,
      port: 25,
    });
    expect(r.error).toBeUndefined();
    expect(r.buf).toMatch(/^220 b[12] ready/);
    expect(r.firstByteMs).toBeLessThan(2000);
  });

  it('raw TCP on a non-opaque port is detected as opaque and relayed over mTLS', async () => {
    const r = await agent<{ buf: string; error?: string }>('tcp', {
      ip: clusterIps.web,
      port: 9000,
      send: 'hello raw tcp',
      expectBytes: 13,
    });
    expect(r.buf).toBe('hello raw tcp');
    expect(
      podFetch('b1', 'http://127.0.0.1:4191/metrics').body + podFetch('b2', 'http://127.0.0.1:4191/metrics').body,
    ).toMatch(/tcp_open_total\{direction="inbound"[^}]*target_addr="[0-9.]+:9000",tls="true"/);
  });

  it('plaintext into a meshed pod (unmeshed clients, kubelet probes) is detected and forwarded at once', () => {
    const t0 = Date.now();
    const r = podFetch('u', `http://${PODS[1]!.ip}:8080/probe`);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body).app).toBe('b1');
    expect(JSON.parse(r.body).headers['l5d-client-id']).toBeUndefined();
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(podFetch('b1', 'http://127.0.0.1:4191/metrics').body).toMatch(
      /request_total\{direction="inbound"[^}]*tls="no_identity"/,
    );
  });

  it('meshed → unmeshed is plaintext and works', async () => {
    const [r] = await agent<H1[]>('h1', { ip: clusterIps.plain, port: 80, host: `plain.${KNS}.svc.cluster.local` });
    expect(r!.status).toBe(200);
    const body = JSON.parse(r!.body) as { app: string; headers: Record<string, string> };
    expect(body.app).toBe('u');
    expect(body.headers['l5d-client-id']).toBeUndefined();
  });

  it("a pod calling its own Service reaches its own app in plaintext (the proxy's connection skips the redirect)", async () => {
    // Without the pod's own IPs the outbound proxy would originate mTLS to its own pod IP, and the app
    // (not the inbound proxy: the proxy's own connections are not redirected) would get a TLS hello.
    const rs = await agent<H1[]>('h1', { ip: clusterIps.self, port: 80, host: `self.${KNS}.svc.cluster.local`, n: 5 });
    expect(rs.map((r) => r.error ?? r.status)).toEqual([200, 200, 200, 200, 200]);
    expect((JSON.parse(rs[0]!.body) as { app: string }).app).toBe('a');
    expect(podFetch('a', 'http://127.0.0.1:4191/metrics').body).toMatch(
      new RegExp(
        `response_total\\{direction="outbound",authority="self\\.${KNS}\\.svc\\.cluster\\.local:80"[^}]*tls="no_identity"[^}]*no_tls_reason="loopback"`,
      ),
    );
  });

  it('an endpoint whose certificate names another identity is refused', async () => {
    const [r] = await agent<H1[]>('h1', {
      ip: clusterIps.impostor,
      port: 80,
      host: `impostor.${KNS}.svc.cluster.local`,
    });
    expect(r!.status).toBe(502);
    expect(r!.headers['x-minimesh-proxy-error']).toMatch(/MINIMESH_PROXY_PEER_IDENTITY_MISMATCH/);
  });

  it('certificate renewal under traffic drops nothing', async () => {
    const before = /control_identity_cert_refreshes_total\{result="ok"\} (\d+)/.exec(
      podFetch('a', 'http://127.0.0.1:4191/metrics').body,
    )?.[1];
    // Leaves live 40 s (+1 s skew); renewal comes at ~70 % of the remaining life: keep traffic flowing
    // until the client's proxy has renewed (bounded at 65 s), then a little longer.
    const results: H1[] = [];
    const refreshes = () =>
      Number(
        /control_identity_cert_refreshes_total\{result="ok"\} (\d+)/.exec(
          podFetch('a', 'http://127.0.0.1:4191/metrics').body,
        )?.[1],
      );
    const end = Date.now() + 65_000;
    while (Date.now() < end && refreshes() <= Number(before))
      results.push(
        ...(await agent<H1[]>('h1', {
          ip: clusterIps.web,
          port: 80,
          host: WEB(),
          n: 20,
          parallel: 4,
          agentKey: 'renew',
        })),
      );
    for (let i = 0; i < 5; i++)
      results.push(
        ...(await agent<H1[]>('h1', {
          ip: clusterIps.web,
          port: 80,
          host: WEB(),
          n: 20,
          parallel: 4,
          agentKey: 'renew',
        })),
      );
    const after = refreshes();
    expect(Number(after)).toBeGreaterThan(Number(before));
    expect(results.filter((r) => r.status !== 200)).toEqual([]);
    expect(results.length).toBeGreaterThan(100);
  }, 120_000);

  it('an endpoint removed from destination stops getting traffic', async () => {
    await writeSlice(
      'web',
      [
        { name: 'http', targetPort: 8080 },
        { name: 'grpc', targetPort: 8081 },
        { name: 'smtp', targetPort: 25 },
        { name: 'echo', targetPort: 9000 },
      ],
      ['b1'],
    );
    await new Promise((r) => setTimeout(r, 1500));
    const rs = await agent<H1[]>('h1', {
      ip: clusterIps.web,
      port: 80,
      host: WEB(),
      n: 40,
      parallel: 4,
      agentKey: 'web',
    });
    expect(rs.map((r) => (JSON.parse(r.body) as { app: string }).app).filter((a) => a !== 'b1')).toEqual([]);
  });

  it('destination killed mid-test: traffic continues from the last known endpoints', async () => {
    procs.get('destination')!.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 500));
    const rs = await agent<H1[]>('h1', {
      ip: clusterIps.web,
      port: 80,
      host: WEB(),
      n: 30,
      parallel: 3,
      agentKey: 'after-kill',
    });
    expect(rs.filter((r) => r.status !== 200)).toEqual([]);
    expect(rs.length).toBe(30);
  });
});
