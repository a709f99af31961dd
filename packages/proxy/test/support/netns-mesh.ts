// A small mesh on a virtual node, as root, for the interop test and the benchmark: a node network
// namespace with a bridge, "pods" as namespaces on it (Pod API objects with schedulerName none whose
// status is patched here), proxy-init's real iptables rules in meshed pods, proxies running as uid 2102,
// and the REAL control plane (minimesh identity, destination, policy) on the host's loopback against the
// local cluster's API server. Proxies reach the control plane at 127.0.0.1 inside their pod (plaintext
// gRPC, as for any loopback address), through a small bridge per pod to unix sockets on the host that
// this process forwards to the control plane's ports: the same path for minimesh-proxy and linkerd2-proxy.
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createPrivateKey, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  adminClient,
  clusterInfo,
  createNamespace,
  createServiceAccountToken,
  ensureCluster,
  type ClusterInfo,
} from '@minimesh/local-cluster';
import { policyCrds } from '@minimesh/policy';
import { createKeyAndCsr } from '../../src/identity/csr.js';
import { createTestPki, type TestPki } from './pki.js';
import type { PolicyContext } from './policy-server.js';

export const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

const crdPath = (name: string) => `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`;

/** Waits until every CRD named is Established. */
async function waitEstablished(names: readonly string[]): Promise<void> {
  const kube = adminClient();
  await waitFor(`the CRDs ${names.join(', ')} to be established`, async () => {
    for (const n of names) {
      const c = await kube.get<{ status?: { conditions?: { type: string; status: string }[] } }>(crdPath(n));
      if (!(c?.status?.conditions ?? []).some((x) => x.type === 'Established' && x.status === 'True')) return false;
    }
    return true;
  });
}
const PROXY_INIT = join(ROOT, 'packages/proxy-init/dist/main.js');
const IDENTITY = join(ROOT, 'packages/identity/dist/main.js');
const DESTINATION = join(ROOT, 'packages/destination/dist/main.js');
const CP_BRIDGE = join(ROOT, 'packages/proxy/test/apps/cp-bridge.mjs');
export const PROXY_UID = 2102;
const TRUST_DOMAIN = 'cluster.local';
/** Where each pod's bridge listens (127.0.0.1 inside the pod) for each control-plane service. */
export const CP_PORTS = { identity: 18080, destination: 18086, policy: 18090 } as const;
type CpService = keyof typeof CP_PORTS;

export interface MeshPod {
  name: string;
  ip: string;
  sa: string;
  netns: string;
  /** Its identity when meshed. */
  identity: string;
  /** Path of its service-account token (audience identity.minimesh.io). */
  tokenFile: string;
  /** Its IPv6 address, on a dual-stack mesh (create(prefix, { ipv6: true })). */
  ip6?: string;
}

export interface ServicePort {
  name: string;
  port: number;
  targetPort: number;
}

/** The linkerd2-proxy binary: an option, MINIMESH_PEER_LINKERD2_PROXY / _BENCH_, or /opt/minimesh-peers. */
export function findLinkerd2Proxy(explicit?: string, envName = 'MINIMESH_PEER_LINKERD2_PROXY'): string | undefined {
  for (const p of [explicit, process.env[envName], '/opt/minimesh-peers/linkerd2-proxy'])
    if (p && existsSync(p)) return p;
  return undefined;
}

export class NetnsMesh {
  readonly tag = randomBytes(2).toString('hex');
  readonly subnet = `172.30.${100 + (parseInt(this.tag, 16) % 100)}`;
  /** The IPv6 /64 of a dual-stack mesh (unique local addresses, canonical form), without the host part. */
  readonly subnet6 = `fd00:6d6d:${parseInt(this.tag, 16).toString(16)}:`;
  /** Dual stack: each pod gets an IPv6 address beside its IPv4 one, listed in its podIPs. */
  private ipv6 = false;
  readonly kns: string;
  readonly nodeNs: string;
  private readonly bridge: string;
  readonly dir: string;
  pki!: TestPki;
  cluster!: ClusterInfo;
  readonly pods = new Map<string, MeshPod>();
  readonly procs = new Map<string, ChildProcess & { log?: () => string }>();
  private readonly bridges: Server[] = [];
  private readonly cpPorts = new Map<CpService, number>();
  private readonly createdCrds: string[] = [];
  private nextIp = 10;

  private constructor(prefix: string) {
    this.kns = `${prefix}-${this.tag}`;
    this.nodeNs = `${prefix}-${this.tag}-node`;
    this.bridge = `${prefix.slice(0, 4)}${this.tag}br`;
    this.dir = mkdtempSync(`/tmp/${prefix}-`);
    chmodSync(this.dir, 0o755);
  }

  /** The cluster, the PKI, the namespace and the node; `prefix` names everything (keep it short). */
  static async create(prefix: string, opts: { ipv6?: boolean } = {}): Promise<NetnsMesh> {
    if (process.getuid?.() !== 0)
      throw new Error('the netns mesh runs as root (network namespaces, iptables, setpriv)');
    for (const f of [PROXY_INIT, IDENTITY, DESTINATION])
      if (!existsSync(f)) throw new Error(`${f} is missing: build the packages first (npm run build)`);
    const m = new NetnsMesh(prefix);
    m.ipv6 = opts.ipv6 ?? false;
    try {
      m.pki = await createTestPki(TRUST_DOMAIN);
      m.cluster = await ensureCluster();
      m.sh(['ip', 'netns', 'add', m.nodeNs]);
      m.sh(['ip', '-n', m.nodeNs, 'link', 'set', 'lo', 'up']);
      m.sh(['ip', '-n', m.nodeNs, 'link', 'add', m.bridge, 'type', 'bridge']);
      m.sh(['ip', '-n', m.nodeNs, 'addr', 'add', `${m.subnet}.1/24`, 'dev', m.bridge]);
      if (m.ipv6) m.sh(['ip', '-n', m.nodeNs, 'addr', 'add', `${m.subnet6}:1/64`, 'dev', m.bridge, 'nodad']);
      m.sh(['ip', '-n', m.nodeNs, 'link', 'set', m.bridge, 'up']);
      await createNamespace(m.kns);
    } catch (err) {
      await m.destroy();
      throw err;
    }
    return m;
  }

  idOf(sa: string): string {
    return `${sa}.${this.kns}.serviceaccount.identity.${this.kns}.${TRUST_DOMAIN}`;
  }

  /** Networks destination and policy lookups apply to (pods and services). */
  get clusterNetworks(): string {
    return `${this.subnet}.0/24,${this.cluster.serviceCidr}`;
  }

  sh(argv: string[], opts: { allowFail?: boolean } = {}): string {
    const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8' });
    if (r.status !== 0 && !opts.allowFail) throw new Error(`${argv.join(' ')} failed (${r.status}): ${r.stderr}`);
    return r.stdout;
  }

  /** A pod: its namespace on the node's bridge, its Pod object (Running, Ready), its token. */
  async addPod(name: string, sa: string, opts: { meshed?: boolean } = {}): Promise<MeshPod> {
    const meshed = opts.meshed ?? true;
    const i = this.nextIp++;
    const pod: MeshPod = {
      name,
      ip: `${this.subnet}.${i}`,
      sa,
      netns: `${this.kns}-${name}`,
      identity: this.idOf(sa),
      tokenFile: join(this.dir, `token-${name}`),
      ...(this.ipv6 ? { ip6: `${this.subnet6}:${i.toString(16)}` } : {}),
    };
    const inner = `${this.bridge.slice(0, 8)}p${i}`;
    const outer = `${this.bridge.slice(0, 8)}n${i}`;
    this.sh(['ip', 'netns', 'add', pod.netns]);
    this.pods.set(name, pod);
    this.sh(['ip', '-n', pod.netns, 'link', 'set', 'lo', 'up']);
    this.sh([
      'ip',
      'link',
      'add',
      inner,
      'netns',
      pod.netns,
      'type',
      'veth',
      'peer',
      'name',
      outer,
      'netns',
      this.nodeNs,
    ]);
    this.sh(['ip', '-n', this.nodeNs, 'link', 'set', outer, 'master', this.bridge, 'up']);
    this.sh(['ip', '-n', pod.netns, 'addr', 'add', `${pod.ip}/24`, 'dev', inner]);
    this.sh(['ip', '-n', pod.netns, 'link', 'set', inner, 'up']);
    this.sh(['ip', '-n', pod.netns, 'route', 'add', 'default', 'via', `${this.subnet}.1`]);
    // nodad: the address is usable at once (no duplicate address detection on a bridge made here).
    if (pod.ip6) this.sh(['ip', '-n', pod.netns, 'addr', 'add', `${pod.ip6}/64`, 'dev', inner, 'nodad']);
    const kube = adminClient();
    await kube
      .request('POST', `/api/v1/namespaces/${this.kns}/serviceaccounts`, {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { name: sa },
      })
      .catch(() => undefined);
    await kube.request('POST', `/api/v1/namespaces/${this.kns}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, labels: { app: name, ...(meshed ? { 'minimesh.io/control-plane-ns': this.kns } : {}) } },
      spec: {
        schedulerName: 'none',
        serviceAccountName: sa,
        containers: [{ name: 'app', image: 'busybox', command: ['sleep', '3600'] }],
      },
    });
    await kube.request(
      'PATCH',
      `/api/v1/namespaces/${this.kns}/pods/${name}/status`,
      {
        status: {
          phase: 'Running',
          podIP: pod.ip,
          podIPs: [{ ip: pod.ip }, ...(pod.ip6 ? [{ ip: pod.ip6 }] : [])],
          conditions: [
            { type: 'Ready', status: 'True' },
            { type: 'ContainersReady', status: 'True' },
          ],
        },
      },
      'application/merge-patch+json',
    );
    const token = await createServiceAccountToken({
      namespace: this.kns,
      serviceAccount: sa,
      audiences: ['identity.minimesh.io'],
    });
    writeFileSync(pod.tokenFile, token);
    chmodSync(pod.tokenFile, 0o644);
    return pod;
  }

  pod(name: string): MeshPod {
    const p = this.pods.get(name);
    if (!p) throw new Error(`no pod ${name}`);
    return p;
  }

  /** A selector-less Service (with `annotations`) and an EndpointSlice naming `pods`; returns its ClusterIP. */
  async service(
    name: string,
    ports: ServicePort[],
    pods: string[],
    annotations: Record<string, string> = {},
  ): Promise<string> {
    const kube = adminClient();
    const svc = (await kube.request('POST', `/api/v1/namespaces/${this.kns}/services`, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, annotations },
      spec: { ports: ports.map((p) => ({ ...p, protocol: 'TCP' })) },
    })) as { spec: { clusterIP: string } };
    await kube.request('POST', `/apis/discovery.k8s.io/v1/namespaces/${this.kns}/endpointslices`, {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: `${name}-slice`,
        labels: { 'kubernetes.io/service-name': name, 'endpointslice.kubernetes.io/managed-by': 'mm-netns-mesh' },
      },
      addressType: 'IPv4',
      endpoints: pods.map((p) => ({
        addresses: [this.pod(p).ip],
        conditions: { ready: true },
        targetRef: { kind: 'Pod', name: p, namespace: this.kns },
      })),
      ports: ports.map((p) => ({ name: p.name, port: p.targetPort, protocol: 'TCP' })),
    });
    return svc.spec.clusterIP;
  }

  fqdn(service: string): string {
    return `${service}.${this.kns}.svc.cluster.local`;
  }

  /** Runs `argv` in the background (in a pod when `pod` is given), keeping the last 20 kB of its output. */
  start(key: string, argv: string[], opts: { pod?: string; env?: Record<string, string>; uid?: number } = {}) {
    const prefix = opts.pod ? ['ip', 'netns', 'exec', this.pod(opts.pod).netns] : [];
    const setpriv =
      opts.uid !== undefined
        ? ['setpriv', '--reuid', String(opts.uid), '--regid', String(opts.uid), '--clear-groups']
        : [];
    const full = [...prefix, ...setpriv, ...argv];
    const child = spawn(full[0]!, full.slice(1), {
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    }) as ChildProcess & { log?: () => string };
    let log = '';
    const keep = (d: Buffer) => (log = (log + d.toString()).slice(-20_000));
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    child.log = () => log;
    this.procs.get(key)?.kill('SIGKILL');
    this.procs.set(key, child);
    return child;
  }

  logOf(key: string): string {
    return this.procs.get(key)?.log?.() ?? '';
  }

  async stop(key: string, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const p = this.procs.get(key);
    this.procs.delete(key);
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise((r) => p.once('exit', r));
    p.kill(signal);
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
  }

  /** identity and destination (and a policy server, when given its program) on the host's loopback. */
  async startControlPlane(
    opts: {
      issuanceLifetime?: string;
      policy?: (ctx: PolicyContext) => string[];
      /** Install the Gateway API's route CRDs (TLSRoute, TCPRoute...) too, before the policy controller starts. */
      gatewayApi?: boolean;
    } = {},
  ) {
    mkdirSync(join(this.dir, 'issuer'), { recursive: true });
    writeFileSync(join(this.dir, 'issuer', 'crt.pem'), this.pki.issuerPem);
    writeFileSync(join(this.dir, 'issuer', 'key.pem'), this.pki.issuerKeyPem);
    writeFileSync(join(this.dir, 'ca.crt'), this.pki.anchorPem);
    const idPort = await freePort();
    const dstPort = await freePort();
    const node = process.execPath;
    this.start('identity', [
      node,
      IDENTITY,
      '--addr',
      `127.0.0.1:${idPort}`,
      '--admin-addr',
      `127.0.0.1:${await freePort()}`,
      '--issuer-dir',
      join(this.dir, 'issuer'),
      '--trust-anchors',
      join(this.dir, 'ca.crt'),
      '--trust-domain',
      TRUST_DOMAIN,
      '--controller-namespace',
      this.kns,
      '--issuance-lifetime',
      opts.issuanceLifetime ?? '24h',
      '--kubeconfig',
      this.cluster.kubeconfigPath,
    ]);
    this.start('destination', [
      node,
      DESTINATION,
      '--addr',
      `127.0.0.1:${dstPort}`,
      '--admin-addr',
      '127.0.0.1:0',
      '--controller-namespace',
      this.kns,
      '--identity-trust-domain',
      TRUST_DOMAIN,
      '--kubeconfig',
      this.cluster.kubeconfigPath,
      '--lease-name',
      this.kns,
    ]);
    this.cpPorts.set('identity', idPort);
    this.cpPorts.set('destination', dstPort);
    if (opts.policy) {
      await this.installPolicyCrds();
      if (opts.gatewayApi) await this.installGatewayApiCrds();
      const polPort = await freePort();
      this.start(
        'policy',
        opts.policy({
          addr: `127.0.0.1:${polPort}`,
          adminAddr: `127.0.0.1:${await freePort()}`,
          kubeconfig: this.cluster.kubeconfigPath,
          controllerNamespace: this.kns,
          trustDomain: TRUST_DOMAIN,
          clusterNetworks: this.clusterNetworks,
        }),
      );
      this.cpPorts.set('policy', polPort);
    }
    for (const [svc, port] of this.cpPorts) await this.unixBridge(join(this.dir, `${svc}.sock`), port);
    await waitFor(
      'the control plane to listen',
      async () => {
        for (const port of this.cpPorts.values()) if (!(await canConnect(port))) return false;
        return true;
      },
      30_000,
    );
  }

  /** The policy.minimesh.io CRDs the policy controller watches, when the cluster lacks them (removed again by destroy). */
  private async installPolicyCrds(): Promise<void> {
    const kube = adminClient();
    for (const crd of policyCrds()) {
      if (await kube.get(crdPath(crd.metadata.name))) continue;
      await kube.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
      this.createdCrds.push(crdPath(crd.metadata.name));
    }
    await waitEstablished(policyCrds().map((c) => c.metadata.name));
  }

  /**
   * The Gateway API's route CRDs as the CRD chart renders them (scripts/gateway-api.sh, applied
   * server-side as a cluster admin would); those the cluster lacked are removed again by destroy.
   */
  private async installGatewayApiCrds(): Promise<void> {
    const names = ['httproutes', 'grpcroutes', 'tlsroutes', 'tcproutes'].map((r) => `${r}.gateway.networking.k8s.io`);
    const kube = adminClient();
    const missing: string[] = [];
    for (const n of names) if (!(await kube.get(crdPath(n)))) missing.push(n);
    if (missing.length === 0) return;
    const crds = execFileSync('bash', [join(ROOT, 'scripts', 'gateway-api.sh'), 'crds'], {
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    });
    const c = clusterInfo();
    execFileSync(
      c.kubectlPath,
      ['--kubeconfig', c.kubeconfigPath, 'apply', '--server-side', '--field-manager=minimesh-test', '-f', '-'],
      { input: crds, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    this.createdCrds.push(...missing.map(crdPath));
    await waitEstablished(names);
  }

  /** A unix socket (crosses network namespaces) piped to 127.0.0.1:port on the host. */
  private async unixBridge(path: string, port: number): Promise<void> {
    const s = createServer((c) => {
      const up = connect(port, '127.0.0.1');
      c.pipe(up).pipe(c);
      c.on('error', () => up.destroy());
      up.on('error', () => c.destroy());
    });
    await new Promise<void>((r) => s.listen(path, () => r()));
    chmodSync(path, 0o777);
    this.bridges.push(s);
  }

  /**
   * proxy-init's real rules (the injector's arguments) and the pod's control-plane bridge. `ipv6`: the
   * injector's arguments with proxyInit.ipv6 on (ip6tables rules too), in its default nft mode.
   */
  async meshPod(name: string, opts: { ipv6?: boolean } = {}): Promise<void> {
    const pod = this.pod(name);
    this.sh([
      'ip',
      'netns',
      'exec',
      pod.netns,
      process.execPath,
      PROXY_INIT,
      '--incoming-proxy-port',
      '4143',
      '--outgoing-proxy-port',
      '4140',
      '--proxy-uid',
      String(PROXY_UID),
      '--inbound-ports-to-ignore',
      '4190,4191',
      '--outbound-ports-to-ignore',
      '443,6443',
      ...(opts.ipv6 ? ['--ipv6=true', '--iptables-mode', 'nft'] : ['--ipv6=false']),
    ]);
    const routes = [...this.cpPorts.keys()].map((svc) => `${CP_PORTS[svc]}=${join(this.dir, `${svc}.sock`)}`);
    const bridge = this.start(`bridge-${name}`, [process.execPath, CP_BRIDGE, ...routes], { pod: name });
    await waitFor(`the control-plane bridge in ${name}`, () => bridge.log?.().includes('listening'), 10_000);
  }

  /** The environment of a minimesh-proxy in `pod`, reaching the control plane at the pod's loopback. */
  minimeshEnv(name: string, extra: Record<string, string> = {}): Record<string, string> {
    const pod = this.pod(name);
    return {
      MINIMESH_PROXY_LOG: 'warn',
      MINIMESH_PROXY_LOG_FORMAT: 'json',
      MINIMESH_PROXY_IDENTITY_LOCAL_NAME: pod.identity,
      MINIMESH_PROXY_IDENTITY_TRUST_ANCHORS: this.pki.anchorPem,
      MINIMESH_PROXY_IDENTITY_TOKEN_FILE: pod.tokenFile,
      MINIMESH_PROXY_IDENTITY_SVC_ADDR: `127.0.0.1:${CP_PORTS.identity}`,
      MINIMESH_PROXY_DESTINATION_SVC_ADDR: `127.0.0.1:${CP_PORTS.destination}`,
      MINIMESH_PROXY_DESTINATION_CONTEXT: JSON.stringify({ ns: this.kns, nodeName: 'mm-node', pod: name }),
      MINIMESH_PROXY_SHUTDOWN_GRACE_PERIOD: '1s',
      // The same policy controller as linkerd2-proxy's, when the harness runs one.
      ...(this.cpPorts.has('policy')
        ? {
            MINIMESH_PROXY_POLICY_SVC_ADDR: `127.0.0.1:${CP_PORTS.policy}`,
            MINIMESH_PROXY_POLICY_WORKLOAD: JSON.stringify({ ns: this.kns, pod: name }),
            MINIMESH_PROXY_POLICY_CLUSTER_NETWORKS: this.clusterNetworks,
            MINIMESH_PROXY_INBOUND_DEFAULT_POLICY: 'all-unauthenticated',
          }
        : {}),
      ...extra,
    };
  }

  /**
   * The environment of a linkerd2-proxy in `pod` (peers/README.md): its key and CSR made here (P-256,
   * PKCS#8 DER; CN and one DNS SAN = the identity), one thread, inbound default policy all-unauthenticated.
   */
  async linkerdEnv(
    name: string,
    appPorts: string,
    extra: Record<string, string> = {},
  ): Promise<Record<string, string>> {
    const pod = this.pod(name);
    const idDir = join(this.dir, `l5d-id-${name}`);
    mkdirSync(idDir, { recursive: true });
    const { keyPem, csrDer } = await createKeyAndCsr(pod.identity);
    writeFileSync(join(idDir, 'key.p8'), createPrivateKey(keyPem).export({ type: 'pkcs8', format: 'der' }));
    writeFileSync(join(idDir, 'csr.der'), csrDer);
    chmodSync(idDir, 0o755);
    for (const f of ['key.p8', 'csr.der']) chmodSync(join(idDir, f), 0o644);
    const cp = (svc: string) => `${svc}.${this.kns}.serviceaccount.identity.${this.kns}.${TRUST_DOMAIN}`;
    return {
      LINKERD2_PROXY_LOG: 'warn',
      LINKERD2_PROXY_CORES: '1',
      LINKERD2_PROXY_IDENTITY_DIR: idDir,
      LINKERD2_PROXY_IDENTITY_TOKEN_FILE: pod.tokenFile,
      LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS: this.pki.anchorPem,
      LINKERD2_PROXY_IDENTITY_LOCAL_NAME: pod.identity,
      LINKERD2_PROXY_IDENTITY_SVC_ADDR: `127.0.0.1:${CP_PORTS.identity}`,
      LINKERD2_PROXY_IDENTITY_SVC_NAME: cp('identity'),
      LINKERD2_PROXY_DESTINATION_SVC_ADDR: `127.0.0.1:${CP_PORTS.destination}`,
      LINKERD2_PROXY_DESTINATION_SVC_NAME: cp('destination'),
      LINKERD2_PROXY_DESTINATION_CONTEXT: JSON.stringify({ ns: this.kns, nodeName: 'mm-node', pod: name }),
      LINKERD2_PROXY_DESTINATION_PROFILE_SUFFIXES: 'svc.cluster.local.',
      LINKERD2_PROXY_DESTINATION_PROFILE_NETWORKS: this.clusterNetworks,
      LINKERD2_PROXY_POLICY_SVC_ADDR: `127.0.0.1:${CP_PORTS.policy}`,
      LINKERD2_PROXY_POLICY_SVC_NAME: cp('policy'),
      LINKERD2_PROXY_POLICY_WORKLOAD: JSON.stringify({ ns: this.kns, pod: name }),
      LINKERD2_PROXY_POLICY_CLUSTER_NETWORKS: this.clusterNetworks,
      LINKERD2_PROXY_INBOUND_DEFAULT_POLICY: 'all-unauthenticated',
      LINKERD2_PROXY_INBOUND_PORTS: appPorts,
      LINKERD2_PROXY_ADMIN_LISTEN_ADDR: '0.0.0.0:4191',
      LINKERD2_PROXY_INBOUND_LISTEN_ADDR: '0.0.0.0:4143',
      LINKERD2_PROXY_OUTBOUND_LISTEN_ADDR: '127.0.0.1:4140',
      LINKERD2_PROXY_CONTROL_LISTEN_ADDR: '0.0.0.0:4190',
      ...extra,
    };
  }

  /**
   * GET inside a pod's namespace without blocking this process. Use it for requests that go through a
   * proxy that may call the control plane: the control-plane bridges (unixBridge) run in this process, so
   * while the synchronous podFetch waits, destination's answers wait in the bridge too.
   */
  async podFetchAsync(name: string, url: string): Promise<{ status: number; body: string }> {
    const script = `fetch(${JSON.stringify(url)}).then(async r=>process.stdout.write(JSON.stringify({status:r.status,body:await r.text()}))).catch(e=>process.stdout.write(JSON.stringify({status:0,body:String(e)})))`;
    const child = spawn('ip', ['netns', 'exec', this.pod(name).netns, process.execPath, '-e', script]);
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    if (code !== 0) throw new Error(`fetch ${url} in pod ${name} failed (${code}): ${err}`);
    return JSON.parse(out) as { status: number; body: string };
  }

  /** GET inside a pod's namespace (e.g. its proxy's admin on 127.0.0.1:4191). Blocks this process. */
  podFetch(name: string, url: string): { status: number; body: string } {
    const out = this.sh([
      'ip',
      'netns',
      'exec',
      this.pod(name).netns,
      process.execPath,
      '-e',
      `fetch(${JSON.stringify(url)}).then(async r=>process.stdout.write(JSON.stringify({status:r.status,body:await r.text()}))).catch(e=>process.stdout.write(JSON.stringify({status:0,body:String(e)})))`,
    ]);
    return JSON.parse(out) as { status: number; body: string };
  }

  /** Waits for the proxy in `pod` to report ready on its admin port. */
  async waitReady(name: string, key: string, timeoutMs = 30_000): Promise<void> {
    await waitFor(
      `the proxy in ${name} to be ready`,
      () => {
        const p = this.procs.get(key);
        if (p && (p.exitCode !== null || p.signalCode !== null))
          throw new Error(`exited (${p.exitCode ?? p.signalCode}): ${this.logOf(key).slice(-1500)}`);
        return this.podFetch(name, 'http://127.0.0.1:4191/ready').status === 200;
      },
      timeoutMs,
      () => this.logOf(key).slice(-1500),
    );
  }

  async destroy(): Promise<void> {
    for (const [, p] of this.procs) {
      try {
        p.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
    this.procs.clear();
    for (const b of this.bridges) b.close();
    for (const pod of this.pods.values()) this.sh(['ip', 'netns', 'del', pod.netns], { allowFail: true });
    this.sh(['ip', 'netns', 'del', this.nodeNs], { allowFail: true });
    if (this.cluster)
      await adminClient()
        .request('DELETE', `/api/v1/namespaces/${this.kns}`)
        .catch(() => undefined);
    for (const path of this.createdCrds.splice(0))
      await adminClient()
        .request('DELETE', path)
        .catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 20_000,
  context?: () => string,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v as T;
    } catch (err) {
      last = err;
      if (String(err).includes('exited (')) break;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}${context ? `\n${context()}` : ''}`);
}

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
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
