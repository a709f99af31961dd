// The whole mesh on a cluster (MINIMESH_E2E_DRIVER=local, the default, or k3d): the chart installed
// with the Linkerd tutorial's install command, a client and a server (HTTP and gRPC) in a namespace with
// minimesh.io/inject: enabled, and what issue 8 asks to see: Linkerd's proxy-init arguments and native
// sidecar, the nat chains the Linkerd tutorial lists, mTLS with the client's identity, endpoints following a scale-up and
// a scale-down, the status the policy controller writes on routes of each kind, and every component at
// work in the audit log with nothing refused by RBAC.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LINKERD_PROXY_INIT_ARGS } from '@minimesh/test-support/linkerd';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectDriver } from '../drivers/index.js';
import { MINIMESH_VERSION } from '@minimesh/config';
import { findAuditLeaks, summarizeAudit } from '../src/audit.js';
import { parseCanIList, permissionsUsed, unusedPermissions } from '../src/rbac.js';
import type { CertFiles } from '../src/certs.js';
import {
  applyObjects,
  createMeshCerts,
  ensureGatewayApiCrds,
  eventually,
  kubectlJson,
  identityOf,
  installChart,
  listPods,
  metricLines,
  parseClientLines,
  proxyMetrics,
  uninstallChart,
  SERVER_GRPC_PORT,
  specMeshSetup,
  SERVER_HTTP_PORT,
  type MeshSetup,
  type Pod,
} from '../src/mesh.js';
import { appObjects, readyPods } from '../src/apps.js';
import { cliMain, run } from '../src/tools.js';

const driver = selectDriver();
const suffix = randomBytes(3).toString('hex');
const m: MeshSetup = specMeshSetup(driver, { cpNs: `minimesh-e2e-${suffix}`, appNs: `mm-e2e-app-${suffix}` });
const ROLLOUT_MS = 180_000;
let tmp = '';
let certs: CertFiles;
const startedAt = new Date().toISOString();
let server: Pod;
let client: Pod;
/** `minimesh check --pre` before the chart was installed. */
let preBefore: CheckRun;

interface CheckRun {
  code: number;
  stdout: string;
  stderr: string;
  results: { category: string; description: string; status: string; detail?: string }[];
}

/** `minimesh check ... -o json` against the driver's cluster, as a user runs it. */
async function check(args: readonly string[]): Promise<CheckRun> {
  const r = await run(process.execPath, [cliMain, 'check', ...args, ...driver.kubeArgs(), '-o', 'json'], {
    timeoutMs: 240_000,
  });
  let results: CheckRun['results'] = [];
  try {
    results = (JSON.parse(r.stdout) as { results: CheckRun['results'] }).results;
  } catch {
    /* the assertions below show stdout and stderr */
  }
  return { code: r.code, stdout: r.stdout, stderr: r.stderr, results };
}

const lines = (c: CheckRun): string[] => c.results.map((r) => `${r.status} ${r.description}`);

beforeAll(async () => {
  await driver.setup();
  tmp = mkdtempSync(join(tmpdir(), 'mm-e2e-'));
  certs = await createMeshCerts(tmp);
  preBefore = await check(['--pre', '-n', m.cpNs]);
  await installChart(m, certs);
  for (const c of ['identity', 'destination', 'injector'])
    await readyPods(m, c, { controlPlane: true, timeoutMs: ROLLOUT_MS });
  await applyObjects(driver, appObjects(m));
  [server] = (await readyPods(m, 'server', { timeoutMs: ROLLOUT_MS })) as [Pod];
  [client] = (await readyPods(m, 'client', { timeoutMs: ROLLOUT_MS })) as [Pod];
}, 600_000);

afterAll(async () => {
  if (process.env.MINIMESH_E2E_KEEP) return;
  await driver.kubectl(['delete', 'namespace', m.appNs, '--wait=false', '--ignore-not-found']).catch(() => undefined);
  if (driver.name === 'local') await uninstallChart(m).catch(() => undefined);
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe(`the mesh on the ${driver.name} cluster`, () => {
  it('check --pre: the cluster was ready for the install, and refuses a second one into the same namespace', async () => {
    const found = `no minimesh control plane is installed in namespace ${m.cpNs}`;
    const must = [
      'ok can query the Kubernetes API',
      'ok is running the minimum Kubernetes API version',
      'ok can create Namespaces',
      'ok can create CustomResourceDefinitions',
      'ok can create ClusterRoles',
      'ok can create MutatingWebhookConfigurations',
      'ok can create Secrets',
    ];
    expect(lines(preBefore), preBefore.stdout + preBefore.stderr).toEqual(expect.arrayContaining(must));
    expect(
      preBefore.results.find((r) => r.category === 'pre-kubernetes-capability'),
      'a NET_ADMIN pod passes admission (dry run)',
    ).toMatchObject({ status: 'ok' });
    // k3d: `npm run k3d -- up` installed the chart in this namespace already.
    if (driver.name === 'local') {
      expect(lines(preBefore)).toContain(`ok ${found}`);
      expect(preBefore.code, preBefore.stdout).toBe(0);
    }
    const after = await check(['--pre', '-n', m.cpNs]);
    expect(after.code, after.stdout + after.stderr).toBe(1);
    expect(after.results.find((r) => r.description === found)).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining(`Deployment ${m.cpNs}/minimesh-destination`),
    });
  }, 120_000);

  it("check --proxy: every meshed pod's proxy is ready, holds a certificate that chains to its trust anchors, at the control plane's version", async () => {
    const r = await check(['--proxy', '-n', m.appNs, '-L', m.cpNs, '--wait', '2m']);
    expect(
      lines(r).filter((l) => l.startsWith('fail')),
      r.stdout + r.stderr,
    ).toEqual([]);
    expect(r.code).toBe(0);
    const dataPlane = r.results.filter((x) => x.category === 'minimesh-data-plane');
    expect(dataPlane.map((x) => `${x.status} ${x.description}`)).toEqual([
      'ok data-plane proxies exist',
      'ok data-plane proxies are ready',
      'ok data-plane proxies hold a valid certificate',
      "ok data-plane proxies' certificates chain to their trust anchors",
      "ok data-plane proxies have the control plane's current trust anchors",
      "ok data-plane proxies run the control plane's version",
    ]);
    expect(dataPlane[0]?.detail).toBe(`2 meshed pod(s) in namespace ${m.appNs}`);
    expect(dataPlane[2]?.detail).toMatch(/^the first to expire: .* in \d+\.\d hours/);
    expect(dataPlane[5]?.detail).toBe(MINIMESH_VERSION);
    // Without -n: every namespace, the control plane's own (meshed) pods with the apps.
    const all = await check(['--proxy', '-L', m.cpNs, '--wait', '1m']);
    const exist = all.results.find((x) => x.description === 'data-plane proxies exist');
    expect(exist?.detail, all.stdout).toMatch(/^\d+ meshed pod\(s\) in any namespace$/);
    expect(Number(exist?.detail?.split(' ')[0])).toBeGreaterThanOrEqual(2);
  }, 300_000);

  it("the cli image runs `minimesh version` in the cluster: its own version and the control plane's", async () => {
    const name = 'minimesh-cli-version';
    const labels = { 'app.kubernetes.io/name': name };
    await applyObjects(driver, [
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: m.appNs } },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: `${name}-${m.appNs}`, namespace: m.cpNs },
        rules: [{ apiGroups: ['apps'], resources: ['deployments'], verbs: ['list'] }],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: `${name}-${m.appNs}`, namespace: m.cpNs },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: `${name}-${m.appNs}` },
        subjects: [{ kind: 'ServiceAccount', name, namespace: m.appNs }],
      },
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: m.appNs, labels, annotations: { 'minimesh.io/inject': 'disabled' } },
        spec: {
          serviceAccountName: name,
          restartPolicy: 'Never',
          containers: [
            {
              name: 'cli',
              image: `ghcr.io/minimesh/cli:${MINIMESH_VERSION}`,
              ...(driver.imagePullPolicy ? { imagePullPolicy: driver.imagePullPolicy } : {}),
              args: ['version', '-n', m.cpNs, '-o', 'json'],
            },
          ],
        },
      },
    ]);
    const phase = await eventually('the cli pod to finish', 120_000, async () => {
      const r = await driver.kubectl(['-n', m.appNs, 'get', 'pod', name, '-o', 'jsonpath={.status.phase}']);
      return r.stdout === 'Succeeded' || r.stdout === 'Failed' ? r.stdout : undefined;
    });
    const logs = await driver.kubectl(['-n', m.appNs, 'logs', name]);
    expect(phase, logs.stdout + logs.stderr).toBe('Succeeded');
    const out = JSON.parse(logs.stdout) as { client: string; server: { version: string; deployments: string[] }[] };
    expect(out.client).toBe(MINIMESH_VERSION);
    expect(out.server).toEqual([
      {
        version: MINIMESH_VERSION,
        deployments: expect.arrayContaining(['minimesh-destination', 'minimesh-identity', 'minimesh-injector']),
      },
    ]);
    const image = await driver.kubectl([
      '-n',
      m.appNs,
      'get',
      'pod',
      name,
      '-o',
      'jsonpath={.status.containerStatuses[0].image}',
    ]);
    expect(image.stdout).toContain(`ghcr.io/minimesh/cli:${MINIMESH_VERSION}`);
  }, 180_000);

  it("injects minimesh-init with Linkerd's proxy-init arguments and the proxy as a native sidecar", () => {
    for (const pod of [server, client]) {
      const [init, proxy, ...rest] = pod.spec.initContainers ?? [];
      expect(init?.name).toBe('minimesh-init');
      expect(init?.args?.slice(0, LINKERD_PROXY_INIT_ARGS.length)).toEqual(LINKERD_PROXY_INIT_ARGS);
      expect(init?.securityContext?.capabilities).toEqual({ add: ['NET_ADMIN', 'NET_RAW'], drop: ['ALL'] });
      expect(proxy?.name).toBe('minimesh-proxy');
      expect(proxy?.restartPolicy).toBe('Always');
      expect(proxy?.startupProbe).toBeDefined();
      expect(rest).toEqual([]);
      expect(pod.metadata.labels?.['minimesh.io/control-plane-ns']).toBe(m.cpNs);
      // The init container ran to completion; the sidecar is started and ready.
      const statuses = pod.status.initContainerStatuses ?? [];
      expect(statuses.find((s) => s.name === 'minimesh-init')?.state).toHaveProperty('terminated.exitCode', 0);
      expect(statuses.find((s) => s.name === 'minimesh-proxy')?.ready).toBe(true);
    }
  }, 30_000);

  it("writes Linkerd's nat chains in the server pod", async () => {
    const rules = await driver.natRules(m.appNs, server.metadata.name);
    const expectRule = (chain: string, comment: string, ...parts: string[]): void => {
      const line = rules
        .split('\n')
        .find(
          (l) => l.startsWith(`-A ${chain} `) && (l.includes(`"${comment}"`) || l.includes(`--comment ${comment} `)),
        );
      expect(line, `${chain} rule ${comment} in:\n${rules}`).toBeDefined();
      for (const p of parts) expect(line).toContain(p);
    };
    expect(rules).toContain(':PROXY_INIT_REDIRECT');
    expect(rules).toContain(':PROXY_INIT_OUTPUT');
    expectRule('PREROUTING', 'proxy-init/install-proxy-init-prerouting', '-j PROXY_INIT_REDIRECT');
    expectRule(
      'PROXY_INIT_REDIRECT',
      'proxy-init/ignore-port-4190,4191,4567,4568',
      '--dports 4190,4191,4567,4568',
      '-j RETURN',
    );
    expectRule(
      'PROXY_INIT_REDIRECT',
      'proxy-init/redirect-all-incoming-to-proxy-port',
      '-p tcp',
      '-j REDIRECT',
      '--to-ports 4143',
    );
    expectRule('OUTPUT', 'proxy-init/install-proxy-init-output', '-j PROXY_INIT_OUTPUT');
    expectRule('PROXY_INIT_OUTPUT', 'proxy-init/ignore-proxy-user-id', '--uid-owner 2102', '-j RETURN');
    expectRule('PROXY_INIT_OUTPUT', 'proxy-init/ignore-loopback', '-o lo', '-j RETURN');
    expectRule('PROXY_INIT_OUTPUT', 'proxy-init/ignore-port-443,6443', '--dports 443,6443', '-j RETURN');
    expectRule(
      'PROXY_INIT_OUTPUT',
      'proxy-init/redirect-all-outgoing-to-proxy-port',
      '-p tcp',
      '-j REDIRECT',
      '--to-ports 4140',
    );
  }, 60_000);

  it("carries HTTP and gRPC requests over mTLS with the client's identity", async () => {
    const clientId = identityOf('client', m.appNs, m.cpNs);
    for (const [container, ok] of [
      ['http', (l: { status?: number }) => l.status === 200],
      ['grpc', (l: { ok?: boolean }) => l.ok === true],
    ] as const) {
      await eventually(`client ${container} requests answered`, 60_000, async () => {
        const lines = parseClientLines(await driver.logs(m.appNs, client.metadata.name, container));
        return lines.filter(ok).length >= 3;
      });
    }
    for (const port of [SERVER_HTTP_PORT, SERVER_GRPC_PORT]) {
      const text = await eventually(`server proxy counts mTLS requests on ${port}`, 60_000, async () => {
        const t = await proxyMetrics(driver, m.appNs, server.metadata.name);
        return metricLines(t, 'request_total', {
          direction: 'inbound',
          tls: 'true',
          client_id: clientId,
          target_addr: `${server.status.podIP}:${port}`,
        }).length > 0
          ? t
          : undefined;
      });
      expect(
        metricLines(text, 'request_total', { direction: 'inbound', tls: 'true', client_id: clientId }).length,
      ).toBeGreaterThan(0);
    }
    // The client side names the server's identity.
    const out = await proxyMetrics(driver, m.appNs, client.metadata.name);
    expect(
      metricLines(out, 'request_total', {
        direction: 'outbound',
        tls: 'true',
        server_id: identityOf('server', m.appNs, m.cpNs),
      }).length,
    ).toBeGreaterThan(0);
  }, 240_000);

  it("moves the client's traffic to new endpoints when the server scales up and down", async () => {
    const scale = async (n: number): Promise<Pod[]> => {
      const r = await driver.kubectl(['scale', 'deployment/server', '-n', m.appNs, `--replicas=${n}`]);
      expect(r.code, r.stderr).toBe(0);
      return readyPods(m, 'server', { count: n, timeoutMs: ROLLOUT_MS });
    };
    const answeredBy = async (since: number): Promise<Set<string>> => {
      const lines = parseClientLines(await driver.logs(m.appNs, client.metadata.name, 'http'));
      return new Set(lines.filter((l) => l.n > since && l.status === 200 && l.pod).map((l) => l.pod as string));
    };
    const lastN = async (): Promise<number> =>
      Math.max(0, ...parseClientLines(await driver.logs(m.appNs, client.metadata.name, 'http')).map((l) => l.n));

    const two = await scale(2);
    const mark = await lastN();
    const both = await eventually('the client reaches both server pods', 60_000, async () => {
      const pods = await answeredBy(mark);
      return two.every((p) => pods.has(p.metadata.name)) ? pods : undefined;
    });
    expect(both.size).toBe(2);
    // The client's proxy itself connected to both endpoints (an unmeshed keep-alive client would stick to one).
    const outbound = await proxyMetrics(driver, m.appNs, client.metadata.name);
    for (const p of two) {
      expect(
        metricLines(outbound, 'request_total', {
          direction: 'outbound',
          target_addr: `${p.status.podIP}:${SERVER_HTTP_PORT}`,
        }).length,
        `outbound requests to ${p.metadata.name}`,
      ).toBeGreaterThan(0);
    }

    const [kept] = await scale(1);
    await eventually(
      'the client reaches only the remaining pod',
      60_000,
      async () => {
        const m2 = await lastN();
        await new Promise((r) => setTimeout(r, 3000));
        const pods = await answeredBy(m2);
        return pods.size === 1 && pods.has(kept?.metadata.name ?? '');
      },
      1000,
    );
    server = kept as Pod;
  }, 600_000);

  it("mirrors an ExternalWorkload into an EndpointSlice: the destination leader's one write (create, update, empty)", async () => {
    // A workload outside Kubernetes (its address is only data here: no traffic goes to it).
    const MIRROR = 'external-workloads-controller.workload.minimesh.io';
    const identity = `vm-1.${m.appNs}.serviceaccount.identity.${m.cpNs}.cluster.local`;
    const workload = (port: number, app: string) => ({
      apiVersion: 'workload.minimesh.io/v1beta1',
      kind: 'ExternalWorkload',
      metadata: { name: 'vm-1', namespace: m.appNs, labels: { app } },
      spec: {
        meshTLS: { identity, serverName: identity },
        workloadIPs: [{ ip: '192.0.2.10' }],
        ports: [{ name: 'http', port }],
      },
    });
    await applyObjects(driver, [
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'legacy', namespace: m.appNs },
        spec: { selector: { app: 'legacy' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
      },
      workload(8080, 'legacy'),
    ]);
    type Slice = {
      metadata: { labels?: Record<string, string> };
      endpoints?: { addresses: string[] }[];
      ports?: { port: number }[];
    };
    const mirrored = async (): Promise<Slice | undefined> => {
      const r = await driver.kubectl([
        '-n',
        m.appNs,
        'get',
        'endpointslices',
        '-l',
        'kubernetes.io/service-name=legacy',
        '-o',
        'json',
      ]);
      if (r.code !== 0) return undefined;
      return (JSON.parse(r.stdout) as { items: Slice[] }).items.find(
        (x) => x.metadata.labels?.['endpointslice.kubernetes.io/managed-by'] === MIRROR,
      );
    };
    // created
    const created = await eventually('the mirrored slice', 60_000, async () => {
      const s = await mirrored();
      return s?.endpoints?.[0]?.addresses[0] === '192.0.2.10' ? s : undefined;
    });
    expect(created.ports?.[0]?.port).toBe(8080);
    // updated: the workload moves to another port
    await applyObjects(driver, [workload(8081, 'legacy')]);
    await eventually('the slice follows the port', 60_000, async () =>
      (await mirrored())?.ports?.[0]?.port === 8081 ? true : undefined,
    );
    // emptied: the workload no longer matches the Service (the mirror reads the slice, then empties it)
    await applyObjects(driver, [workload(8081, 'other')]);
    await eventually('the slice is emptied', 60_000, async () => {
      const s = await mirrored();
      return s && (s.endpoints ?? []).length === 0 ? true : undefined;
    });
  }, 200_000);

  it("writes the status of a route of each kind and of an EgressNetwork: the policy controller leader's writes", async () => {
    // Routes on a Service of their own (the client's traffic to the server stays as it is).
    await ensureGatewayApiCrds(driver);
    const parent = (port: number) => ({ group: '', kind: 'Service', name: 'routes', port });
    const route = (apiVersion: string, kind: string, name: string, port: number) => ({
      apiVersion,
      kind,
      metadata: { name, namespace: m.appNs },
      spec: { parentRefs: [parent(port)], rules: [{ backendRefs: [{ name: 'routes', port }] }] },
    });
    await applyObjects(driver, [
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'routes', namespace: m.appNs },
        spec: {
          selector: { app: 'routes' },
          ports: [
            { name: 'http', port: 80 },
            { name: 'grpc', port: 7070, appProtocol: 'kubernetes.io/h2c' },
          ],
        },
      },
      route('policy.minimesh.io/v1beta3', 'HTTPRoute', 'policy-route', 80),
      route('gateway.networking.k8s.io/v1', 'HTTPRoute', 'gateway-route', 80),
      route('gateway.networking.k8s.io/v1', 'GRPCRoute', 'grpc-route', 7070),
      // An EgressNetwork (outside the cluster networks, traffic denied): its Accepted condition is the
      // other status the leader writes.
      {
        apiVersion: 'policy.minimesh.io/v1alpha1',
        kind: 'EgressNetwork',
        metadata: { name: 'outside', namespace: m.appNs },
        spec: { networks: [{ cidr: '203.0.113.0/24' }], trafficPolicy: 'Deny' },
      },
      // A TLSRoute and a TCPRoute on that EgressNetwork (one port each): their statuses too.
      {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'TLSRoute',
        metadata: { name: 'tls-route', namespace: m.appNs },
        spec: {
          parentRefs: [{ group: 'policy.minimesh.io', kind: 'EgressNetwork', name: 'outside', port: 443 }],
          hostnames: ['partner.example'],
          rules: [
            { backendRefs: [{ group: 'policy.minimesh.io', kind: 'EgressNetwork', name: 'outside', port: 443 }] },
          ],
        },
      },
      {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'TCPRoute',
        metadata: { name: 'tcp-route', namespace: m.appNs },
        spec: {
          parentRefs: [{ group: 'policy.minimesh.io', kind: 'EgressNetwork', name: 'outside', port: 9000 }],
          rules: [
            { backendRefs: [{ group: 'policy.minimesh.io', kind: 'EgressNetwork', name: 'outside', port: 9000 }] },
          ],
        },
      },
    ]);
    type Status = {
      status?: { parents?: { controllerName: string; conditions: { type: string; status: string }[] }[] };
    };
    // The policy controller lists a CRD installed after it started within 30 s (its informer's retry).
    for (const [resource, name] of [
      ['httproutes.policy.minimesh.io', 'policy-route'],
      ['httproutes.gateway.networking.k8s.io', 'gateway-route'],
      ['grpcroutes.gateway.networking.k8s.io', 'grpc-route'],
      ['tlsroutes.gateway.networking.k8s.io', 'tls-route'],
      ['tcproutes.gateway.networking.k8s.io', 'tcp-route'],
    ] as const)
      await eventually(`${resource} ${name}: Accepted and ResolvedRefs`, 90_000, async () => {
        const { status } = await kubectlJson<Status>(driver, ['-n', m.appNs, 'get', resource, name]);
        const ours = status?.parents?.find((p) => p.controllerName === 'minimesh.io/policy-controller');
        return ours?.conditions.map((c) => `${c.type}=${c.status}`).join(',') === 'Accepted=True,ResolvedRefs=True'
          ? true
          : undefined;
      });
    await eventually('egressnetworks.policy.minimesh.io outside: Accepted', 90_000, async () => {
      const { status } = await kubectlJson<{ status?: { conditions?: { type: string; status: string }[] } }>(driver, [
        '-n',
        m.appNs,
        'get',
        'egressnetworks.policy.minimesh.io',
        'outside',
      ]);
      return status?.conditions?.some((c) => c.type === 'Accepted' && c.status === 'True') ? true : undefined;
    });
  }, 200_000);

  it('shows every component at work in the audit log, and nothing refused by RBAC', async () => {
    const appPods = (await listPods(driver, m.appNs, 'app')).map((p) => p.metadata.name);
    const report = await eventually(
      'audit log complete',
      60_000,
      async () => {
        const r = summarizeAudit(await driver.auditEvents(), m.cpNs, [m.appNs]);
        return r.leaseRenewals.length >= 5 && r.mutatedPods.length >= appPods.length ? r : undefined;
      },
      2000,
    );
    expect(report.destinationWatches).toEqual(expect.arrayContaining(['endpointslices', 'pods', 'services']));
    // Renewed about every 2 s.
    expect(report.leaseRenewMedianMs).toBeGreaterThan(1000);
    expect(report.leaseRenewMedianMs).toBeLessThan(4000);
    // One TokenReview per proxy certificate at least (client and server); their bodies are not logged
    // (the tokens), the identities they proved are checked by the mTLS test above.
    expect(report.tokenReviews.filter((t) => t.code === 201).length).toBeGreaterThanOrEqual(2);
    const mutated = new Set(report.mutatedPods.map((p) => p.name));
    for (const name of appPods) expect(mutated).toContain(name);
    expect(report.denied).toEqual([]);
  }, 120_000);

  // Issue 17 item 3: "no permission unused". Each minimesh service account's grants (can-i, in the
  // control-plane namespace) against its requests in this run's audit log: every grant is used (the
  // ExternalWorkload case above takes the destination's EndpointSlice writes).
  const SERVICE_ACCOUNTS = ['minimesh-destination', 'minimesh-identity', 'minimesh-injector'];

  it('uses every permission RBAC grants it (audit log against can-i)', async () => {
    const events = await driver.auditEvents();
    for (const name of SERVICE_ACCOUNTS) {
      const user = `system:serviceaccount:${m.cpNs}:${name}`;
      const r = await driver.kubectl(['auth', 'can-i', '--list', '-n', m.cpNs, '--as', user]);
      expect(r.code, r.stderr).toBe(0);
      const granted = parseCanIList(r.stdout);
      const used = permissionsUsed(events, user);
      const unused = unusedPermissions(granted, used);
      console.log(
        `${name}: ${granted.length} granted, ${granted.length - unused.length} used in this run` +
          (unused.length ? `, not used: ${unused.join(', ')}` : ''),
      );
      expect(granted.length, name).toBeGreaterThan(0);
      expect(unused, `${name}: granted but never used`).toEqual([]);
    }
  }, 60_000);

  it('writes no private key and no bearer token into the audit log (Secrets, tokens at Metadata)', async () => {
    const since = Date.parse(startedAt);
    const events = (await driver.auditEvents()).filter(
      (e) => Date.parse(e.requestReceivedTimestamp ?? e.stageTimestamp ?? '') >= since,
    );
    // The install did write the issuer Secret and the proxies did get tokens: the events are there,
    // without bodies.
    const secretWrites = events.filter(
      (e) => e.objectRef?.resource === 'secrets' && e.objectRef.namespace === m.cpNs && e.verb !== 'watch',
    );
    expect(secretWrites.length, 'Secret requests in the control-plane namespace').toBeGreaterThan(0);
    for (const e of secretWrites) expect(e.requestObject ?? e.responseObject).toBeUndefined();
    const leaks = findAuditLeaks(events, [
      { name: 'the issuer key', pem: readFileSync(certs.issuerKey, 'utf8') },
      { name: 'the trust anchor key', pem: readFileSync(certs.caKey, 'utf8') },
    ]);
    expect(
      leaks,
      'secrets in the audit log (a cluster started with an older k3d/audit-policy.yaml? npm run cluster -- down)',
    ).toEqual([]);
  }, 120_000);
});
