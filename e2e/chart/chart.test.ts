// The chart, rendered by a real helm: lint, golden output (default, HA, the Linkerd tutorial's install command), the
// failure messages for missing certificates, the values schema, and the objects issue 8 specifies.
import { X509Certificate, createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LINKERD_PROXY_INIT_ARGS } from '@minimesh/test-support/linkerd';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMeshConfig } from '@minimesh/config';
import { createTestCerts, type CertFiles } from '../src/certs.js';
import {
  certArgs,
  findObject,
  helmTemplate,
  maskRender,
  parseManifests,
  tutorialInstallArgs,
  type K8sObject,
} from '../src/chart.js';
import { chartDir, ensureHelm, run } from '../src/tools.js';

const NS = 'minimesh';
const goldenDir = join(import.meta.dirname, 'golden');

let tmp: string;
let certs: CertFiles;

beforeAll(async () => {
  ensureHelm();
  tmp = mkdtempSync(join(tmpdir(), 'mm-chart-'));
  certs = await createTestCerts(tmp);
});
afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

async function render(args: string[]): Promise<{ text: string; objects: K8sObject[] }> {
  const r = await helmTemplate(NS, args);
  expect(r.stderr, 'helm template stderr').not.toMatch(/error/i);
  expect(r.code).toBe(0);
  return { text: r.stdout, objects: parseManifests(r.stdout) };
}

type Container = {
  name: string;
  args?: string[];
  env?: { name: string; value?: string }[];
  restartPolicy?: string;
  startupProbe?: unknown;
  securityContext?: Record<string, unknown>;
};
type PodSpec = { initContainers?: Container[]; containers: Container[]; serviceAccountName?: string };
function podSpec(o: K8sObject): PodSpec {
  return (o as unknown as { spec: { template: { spec: PodSpec } } }).spec.template.spec;
}
function envOf(c: Container): Map<string, string | undefined> {
  return new Map((c.env ?? []).map((e) => [e.name, e.value]));
}

describe('helm lint', () => {
  it.each([
    ['default values', [] as string[]],
    ['HA values', ['-f', join(chartDir, 'values-ha.yaml')]],
  ])('passes with %s', async (_name, extra) => {
    const r = await run(ensureHelm(), ['lint', chartDir, '--strict', ...certArgs(certs), ...extra]);
    expect(r.stdout + r.stderr).toContain('0 chart(s) failed');
    expect(r.code).toBe(0);
  });
});

describe('helm template golden output', () => {
  it.each([
    ['default', () => certArgs(certs)],
    ['ha', () => [...certArgs(certs), '-f', join(chartDir, 'values-ha.yaml')]],
    ['tutorial', () => tutorialInstallArgs(certs)],
    ['cni', () => [...certArgs(certs), '--set', 'cni.enabled=true']],
  ])('%s matches its golden file (UPDATE_GOLDEN=1 regenerates)', async (name, args) => {
    const { text } = await render(args());
    const masked = maskRender(text);
    const file = join(goldenDir, `${name}.yaml`);
    if (process.env.UPDATE_GOLDEN === '1' || !existsSync(file)) writeFileSync(file, masked);
    expect(masked).toBe(readFileSync(file, 'utf8'));
    // The mask hides only certificates, keys and checksums: nothing else may vary between renders.
    const again = maskRender((await render(args())).text);
    expect(again).toBe(masked);
  });
});

describe('missing certificates fail the render with what to do', () => {
  it.each([
    [
      'identityTrustAnchorsPEM',
      () => [
        '--set-file',
        `identity.issuer.tls.crtPEM=${certs.issuerCrt}`,
        '--set-file',
        `identity.issuer.tls.keyPEM=${certs.issuerKey}`,
      ],
    ],
    [
      'identity.issuer.tls.crtPEM',
      () => [
        '--set-file',
        `identityTrustAnchorsPEM=${certs.caCrt}`,
        '--set-file',
        `identity.issuer.tls.keyPEM=${certs.issuerKey}`,
      ],
    ],
    [
      'identity.issuer.tls.keyPEM',
      () => [
        '--set-file',
        `identityTrustAnchorsPEM=${certs.caCrt}`,
        '--set-file',
        `identity.issuer.tls.crtPEM=${certs.issuerCrt}`,
      ],
    ],
  ])('without %s', async (value, args) => {
    const r = await helmTemplate(NS, args());
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`${value} is not set`);
    expect(r.stderr).toContain('minimesh certs create');
    expect(r.stderr).toContain(`--set-file ${value}=`);
  });

  it('rejects a trust anchor that is not PEM', async () => {
    const r = await helmTemplate(NS, [
      '--set',
      'identityTrustAnchorsPEM=abc',
      '--set-file',
      `identity.issuer.tls.crtPEM=${certs.issuerCrt}`,
      '--set-file',
      `identity.issuer.tls.keyPEM=${certs.issuerKey}`,
    ]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('identityTrustAnchorsPEM is not a PEM certificate');
  });
});

describe('values schema', () => {
  it("accepts unknown keys such as Linkerd's policyController", async () => {
    const r = await helmTemplate(NS, [
      ...certArgs(certs),
      '--set',
      'policyController.logLevel=debug',
      '--set',
      'someFutureKey.x=1',
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });

  it.each([
    ['webhookFailurePolicy=Sometimes', '/webhookFailurePolicy'],
    ['controllerLogLevel=loud', '/controllerLogLevel'],
    ['proxyInit.iptablesMode=ebpf', '/proxyInit/iptablesMode'],
    ['proxyInit.ignoreInboundPorts=abc', '/proxyInit/ignoreInboundPorts'],
    ['controllerReplicas=-1', '/controllerReplicas'],
  ])('rejects %s', async (set, where) => {
    const r = await helmTemplate(NS, [...certArgs(certs), '--set', set]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(where);
  });
});

describe('values as Linkerd users write them (issue 15)', () => {
  it('accepts integers wherever a port list is', async () => {
    const { objects } = await render([
      ...certArgs(certs),
      '--set',
      'proxyInit.ignoreInboundPorts=4567',
      '--set',
      'proxy.opaquePorts=3306',
      '--set',
      'proxyInit.kubeAPIServerPorts=6443',
      '--set',
      'proxyInit.ignoreOutboundPorts=25',
    ]);
    const cm = findObject(objects, 'ConfigMap', 'minimesh-config') as unknown as { data: Record<string, string> };
    const cfg = parseMeshConfig(JSON.parse(cm.data['config.json']!));
    expect(cfg.proxyInit.ignoreInboundPorts).toBeDefined();
    expect(JSON.stringify(cfg.proxy.opaquePorts)).toContain('3306');
    const init = podSpec(findObject(objects, 'Deployment', 'minimesh-destination')).initContainers![0]!;
    expect(init.args!.join(' ')).toContain('--inbound-ports-to-ignore 4190,4191,4567');
    expect(init.args!.join(' ')).toContain('--outbound-ports-to-ignore 6443,25');
  });

  it("renders Linkerd's resources shape (cpu.request, memory.limit) and Kubernetes' as valid container resources", async () => {
    const { objects } = await render([
      ...certArgs(certs),
      '--set',
      'destinationResources.cpu.request=100m',
      '--set',
      'destinationResources.memory.limit=250Mi',
      '--set',
      'identityResources.requests.cpu=50m',
      '--set',
      'identityResources.limits.memory=100Mi',
      '--set',
      'proxyInjectorResources.cpu.limit=1',
      '--set',
      'proxyInit.resources.memory.limit=60Mi',
    ]);
    const main = (name: string, c: string) =>
      podSpec(findObject(objects, 'Deployment', name)).containers.find((x) => x.name === c) as unknown as {
        resources: unknown;
      };
    expect(main('minimesh-destination', 'destination').resources).toEqual({
      requests: { cpu: '100m' },
      limits: { memory: '250Mi' },
    });
    expect(main('minimesh-identity', 'identity').resources).toEqual({
      requests: { cpu: '50m' },
      limits: { memory: '100Mi' },
    });
    expect(main('minimesh-injector', 'injector').resources).toEqual({ limits: { cpu: '1' } });
    const init = podSpec(findObject(objects, 'Deployment', 'minimesh-identity')).initContainers![0] as unknown as {
      resources: unknown;
    };
    expect(init.resources).toEqual({ limits: { memory: '60Mi' } });
    const bad = await helmTemplate(NS, [...certArgs(certs), '--set', 'destinationResources.cpu.requests=1']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('/destinationResources/cpu');
  });

  it('renders no CRD: they come from charts/minimesh-crds, installed first (issue 31)', async () => {
    const { objects } = await render(certArgs(certs));
    expect(objects.filter((o) => o.kind === 'CustomResourceDefinition')).toEqual([]);
    expect(existsSync(join(chartDir, 'crds'))).toBe(false);
  });

  it('installNamespace=true renders the namespace labelled PSA enforce=privileged, as Linkerd; the default renders none', async () => {
    const on = (await render([...certArgs(certs), '--set', 'installNamespace=true'])).objects;
    const ns = findObject(on, 'Namespace', NS);
    expect(ns.metadata.labels).toMatchObject({
      'pod-security.kubernetes.io/enforce': 'privileged',
      'minimesh.io/is-control-plane': 'true',
      'app.kubernetes.io/part-of': 'minimesh',
      'app.kubernetes.io/component': 'namespace',
    });
    expect(ns.metadata.annotations).toMatchObject({ 'minimesh.io/inject': 'disabled' });
    const off = (await render(certArgs(certs))).objects;
    expect(off.filter((o) => o.kind === 'Namespace')).toEqual([]);
  });

  it("proxyInit.ipv6=true: the control plane's proxies listen on [::] and on both loopbacks", async () => {
    const { objects } = await render([...certArgs(certs), '--set', 'proxyInit.ipv6=true']);
    const spec = podSpec(findObject(objects, 'Deployment', 'minimesh-destination'));
    const proxy = [...(spec.initContainers ?? []), ...spec.containers].find((c) => c.name === 'minimesh-proxy')!;
    const env = envOf(proxy);
    expect(env.get('MINIMESH_PROXY_INBOUND_LISTEN_ADDR')).toBe('[::]:4143');
    expect(env.get('MINIMESH_PROXY_OUTBOUND_LISTEN_ADDR')).toBe('127.0.0.1:4140,[::1]:4140');
    expect(env.get('MINIMESH_PROXY_ADMIN_LISTEN_ADDR')).toBe('[::]:4191');
    expect(spec.initContainers![0]!.args).toContain('--ipv6=true');
  });

  it('logFormat=json sets the format of every controller, its proxy and the injected proxies at once', async () => {
    const { objects } = await render([...certArgs(certs), '--set', 'logFormat=json']);
    for (const d of ['minimesh-destination', 'minimesh-identity', 'minimesh-injector']) {
      const spec = podSpec(findObject(objects, 'Deployment', d));
      const all = [...(spec.initContainers ?? []), ...spec.containers];
      const proxy = all.find((c) => c.name === 'minimesh-proxy')!;
      expect(envOf(proxy).get('MINIMESH_PROXY_LOG_FORMAT'), d).toBe('json');
      const controllers = all.filter((c) => !c.name.startsWith('minimesh-'));
      expect(controllers.length, d).toBeGreaterThan(0);
      for (const c of controllers) expect(c.args, `${d}/${c.name}`).toContain('--log-format=json');
    }
    const cm = findObject(objects, 'ConfigMap', 'minimesh-config') as unknown as { data: Record<string, string> };
    expect(parseMeshConfig(JSON.parse(cm.data['config.json']!)).proxy.logFormat).toBe('json');
  });

  it('labels every object with app.kubernetes.io/component and part-of', async () => {
    const { objects } = await render(tutorialInstallArgs(certs));
    const missing = objects
      .filter(
        (o) =>
          !o.metadata.labels?.['app.kubernetes.io/component'] ||
          o.metadata.labels?.['app.kubernetes.io/part-of'] !== 'minimesh',
      )
      .map((o) => `${o.kind}/${o.metadata.name}`);
    expect(missing).toEqual([]);
  });

  it('NOTES.txt ends with minimesh check, and its rotation hint is certs create --ca', () => {
    const notes = readFileSync(join(chartDir, 'templates', 'NOTES.txt'), 'utf8').trimEnd();
    expect(notes.split('\n').at(-1)!.trim()).toBe('minimesh check');
    expect(notes).toContain('minimesh certs create --ca ca.crt --ca-key ca.key');
  });
});

describe("rendered objects (the Linkerd tutorial's install command)", () => {
  let objects: K8sObject[];
  beforeAll(async () => {
    objects = (await render(tutorialInstallArgs(certs))).objects;
  });

  it('renders exactly the control plane of issue 8', () => {
    const names = objects.map((o) => `${o.kind}/${o.metadata.name}`).sort();
    expect(names).toEqual(
      [
        'ClusterRole/minimesh-minimesh-destination',
        'ClusterRole/minimesh-minimesh-identity',
        'ClusterRole/minimesh-minimesh-injector',
        'ClusterRole/minimesh-minimesh-policy',
        'ClusterRoleBinding/minimesh-minimesh-destination',
        'ClusterRoleBinding/minimesh-minimesh-identity',
        'ClusterRoleBinding/minimesh-minimesh-injector',
        'ClusterRoleBinding/minimesh-minimesh-policy',
        'ConfigMap/minimesh-config',
        'ConfigMap/minimesh-identity-trust-roots',
        'Deployment/minimesh-destination',
        'Deployment/minimesh-identity',
        'Deployment/minimesh-injector',
        'MutatingWebhookConfiguration/minimesh-injector-webhook-config-minimesh',
        'Role/minimesh-destination-lease',
        'Role/minimesh-policy-lease',
        'RoleBinding/minimesh-destination-lease',
        'RoleBinding/minimesh-policy-lease',
        'Secret/minimesh-identity-issuer',
        'Secret/minimesh-injector-k8s-tls',
        'Service/minimesh-dst',
        'Service/minimesh-dst-headless',
        'Service/minimesh-identity',
        'Service/minimesh-identity-headless',
        'Service/minimesh-injector',
        'Service/minimesh-policy',
        'ServiceAccount/minimesh-destination',
        'ServiceAccount/minimesh-identity',
        'ServiceAccount/minimesh-injector',
      ].sort(),
    );
  });

  it('puts the certificates where they belong', () => {
    const ca = readFileSync(certs.caCrt, 'utf8');
    const roots = findObject(objects, 'ConfigMap', 'minimesh-identity-trust-roots') as unknown as {
      data: Record<string, string>;
    };
    expect(roots.data['ca-bundle.crt']?.trim()).toBe(ca.trim());
    const issuer = findObject(objects, 'Secret', 'minimesh-identity-issuer') as unknown as {
      data: Record<string, string>;
    };
    expect(
      Buffer.from(issuer.data['crt.pem'] ?? '', 'base64')
        .toString()
        .trim(),
    ).toBe(readFileSync(certs.issuerCrt, 'utf8').trim());
    expect(
      Buffer.from(issuer.data['key.pem'] ?? '', 'base64')
        .toString()
        .trim(),
    ).toBe(readFileSync(certs.issuerKey, 'utf8').trim());
    const dst = findObject(objects, 'Deployment', 'minimesh-destination');
    const ann = (dst as unknown as { spec: { template: { metadata: { annotations: Record<string, string> } } } }).spec
      .template.metadata.annotations;
    expect(ann['minimesh.io/trust-root-sha256']).toBe(createHash('sha256').update(ca).digest('hex'));
  });

  it('renders the MeshConfig the injector reads, valid for @minimesh/config', () => {
    const cm = findObject(objects, 'ConfigMap', 'minimesh-config') as unknown as { data: Record<string, string> };
    const cfg = parseMeshConfig(JSON.parse(cm.data['config.json'] ?? ''));
    expect(cfg.controlPlaneNamespace).toBe(NS);
    expect(cfg.identityTrustAnchorsPEM.trim()).toBe(readFileSync(certs.caCrt, 'utf8').trim());
    expect(cfg.identity.address).toBe('minimesh-identity.minimesh.svc.cluster.local:8080');
    expect(cfg.destination.address).toBe('minimesh-dst.minimesh.svc.cluster.local:8086');
    expect(cfg.proxyInit.kubeAPIServerPorts).toBe('443,6443');
    expect(cfg.proxy.uid).toBe(2102);
    expect(JSON.stringify(cfg)).not.toContain('PRIVATE KEY');
  });

  it.each([
    // The destination pod also runs the policy controller (8090, admin 9990): the proxy serves all four.
    ['minimesh-destination', 'destination', 'minimesh-destination', [8086, 8090, 9990, 9996], [8086, 9996]],
    ['minimesh-identity', 'identity', 'minimesh-identity', [8080, 9990], [8080, 9990]],
    ['minimesh-injector', 'injector', 'minimesh-injector', [8443, 9995], [8443, 9995]],
  ])(
    "%s is meshed by the chart: minimesh-init with Linkerd's proxy-init arguments, native-sidecar proxy",
    (name, container, sa, ports, mainPorts) => {
      const d = findObject(objects, 'Deployment', name);
      expect(d.metadata.labels?.['minimesh.io/control-plane-ns']).toBe(NS);
      const tmpl = (d as unknown as { spec: { template: { metadata: { labels: Record<string, string> } } } }).spec
        .template.metadata;
      expect(tmpl.labels['minimesh.io/is-control-plane']).toBe('true');
      expect(tmpl.labels['minimesh.io/control-plane-ns']).toBe(NS);
      const spec = podSpec(d);
      expect(spec.serviceAccountName).toBe(sa);
      const [init, proxy] = spec.initContainers ?? [];
      expect(init?.name).toBe('minimesh-init');
      expect(init?.args?.slice(0, LINKERD_PROXY_INIT_ARGS.length)).toEqual(LINKERD_PROXY_INIT_ARGS);
      expect(init?.securityContext?.capabilities).toEqual({ add: ['NET_ADMIN', 'NET_RAW'], drop: ['ALL'] });
      expect(proxy?.name).toBe('minimesh-proxy');
      expect(proxy?.restartPolicy).toBe('Always');
      expect(proxy?.securityContext?.runAsUser).toBe(2102);
      const env = envOf(proxy as Container);
      expect(env.get('MINIMESH_PROXY_INBOUND_PORTS')).toBe(ports.join(','));
      expect(env.get('MINIMESH_PROXY_IDENTITY_LOCAL_NAME')).toBe(
        '$(_pod_sa).$(_pod_ns).serviceaccount.identity.minimesh.cluster.local',
      );
      const main = spec.containers.find((c) => c.name === container);
      expect(main?.args).toContain('--log-level=debug');
      expect((main as unknown as { ports: { containerPort: number }[] }).ports.map((p) => p.containerPort)).toEqual(
        mainPorts,
      );
    },
  );

  it("identity's own proxy gets its certificate from the local identity over loopback", () => {
    const spec = podSpec(findObject(objects, 'Deployment', 'minimesh-identity'));
    const proxy = spec.initContainers?.find((c) => c.name === 'minimesh-proxy') as Container;
    expect(envOf(proxy).get('MINIMESH_PROXY_IDENTITY_SVC_ADDR')).toBe('localhost:8080');
    // A startupProbe would wait for a certificate that only the (not yet started) identity container can sign.
    expect(proxy.startupProbe).toBeUndefined();
    const dst = podSpec(findObject(objects, 'Deployment', 'minimesh-destination')).initContainers?.find(
      (c) => c.name === 'minimesh-proxy',
    ) as Container;
    expect(envOf(dst).get('MINIMESH_PROXY_IDENTITY_SVC_ADDR')).toBe(
      'minimesh-identity.minimesh.svc.cluster.local:8080',
    );
    expect(dst.startupProbe).toBeDefined();
  });

  // Issue 8's list, less `create events` for identity and the injector (neither emits events), and
  // less what no code path sends (issue 17 wants no unused permission): `get` on what destination and
  // the policy controller only list and watch, `patch`/`delete` on EndpointSlices and `patch` on the
  // Lease. e2e/specs/least-privilege.test.ts checks it on the API server.
  it('grants least-privilege RBAC, as issue 8 says, without unused permissions (issue 17)', () => {
    const rules = (kind: string, name: string): unknown =>
      (findObject(objects, kind, name) as unknown as { rules: unknown }).rules;
    expect(rules('ClusterRole', 'minimesh-minimesh-destination')).toEqual([
      { apiGroups: [''], resources: ['services', 'pods'], verbs: ['list', 'watch'] },
      {
        apiGroups: ['discovery.k8s.io'],
        resources: ['endpointslices'],
        verbs: ['get', 'list', 'watch', 'create', 'update'],
      },
      { apiGroups: ['workload.minimesh.io'], resources: ['externalworkloads'], verbs: ['list', 'watch'] },
    ]);
    expect(rules('Role', 'minimesh-destination-lease')).toEqual([
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        resourceNames: ['minimesh-destination-endpoint-write'],
        verbs: ['get', 'update'],
      },
    ]);
    expect(rules('ClusterRole', 'minimesh-minimesh-identity')).toEqual([
      { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
    ]);
    expect(rules('ClusterRole', 'minimesh-minimesh-policy')).toEqual([
      { apiGroups: [''], resources: ['pods', 'services'], verbs: ['list', 'watch'] },
      { apiGroups: ['workload.minimesh.io'], resources: ['externalworkloads'], verbs: ['list', 'watch'] },
      {
        apiGroups: ['policy.minimesh.io'],
        resources: [
          'servers',
          'authorizationpolicies',
          'meshtlsauthentications',
          'networkauthentications',
          'httproutes',
          'httplocalratelimitpolicies',
          'egressnetworks',
        ],
        verbs: ['list', 'watch'],
      },
      // The Gateway API's routes (mesh mode), and the status of the routes it accepts (issue 26).
      {
        apiGroups: ['gateway.networking.k8s.io'],
        resources: ['httproutes', 'grpcroutes', 'tlsroutes', 'tcproutes'],
        verbs: ['list', 'watch'],
      },
      {
        apiGroups: ['policy.minimesh.io'],
        resources: ['httproutes/status', 'egressnetworks/status'],
        verbs: ['patch'],
      },
      {
        apiGroups: ['gateway.networking.k8s.io'],
        resources: ['httproutes/status', 'grpcroutes/status', 'tlsroutes/status', 'tcproutes/status'],
        verbs: ['patch'],
      },
    ]);
    // Its status writer's Lease, in the control-plane namespace only.
    expect(rules('Role', 'minimesh-policy-lease')).toEqual([
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        resourceNames: ['minimesh-policy-write'],
        verbs: ['get', 'update'],
      },
    ]);
    expect(
      (findObject(objects, 'ClusterRoleBinding', 'minimesh-minimesh-policy') as unknown as { subjects: unknown[] })
        .subjects,
    ).toEqual([{ kind: 'ServiceAccount', name: 'minimesh-destination', namespace: NS }]);
    expect(rules('ClusterRole', 'minimesh-minimesh-injector')).toEqual([
      { apiGroups: [''], resources: ['namespaces'], verbs: ['list', 'watch'] },
    ]);
    for (const c of ['destination', 'identity', 'injector']) {
      const b = findObject(objects, 'ClusterRoleBinding', `minimesh-minimesh-${c}`) as unknown as {
        subjects: unknown[];
      };
      expect(b.subjects).toEqual([{ kind: 'ServiceAccount', name: `minimesh-${c}`, namespace: NS }]);
    }
  });

  it('renders Services for the proxies and the API server', () => {
    const ports = (name: string): unknown =>
      (
        findObject(objects, 'Service', name) as unknown as { spec: { ports: { port: number; targetPort: number }[] } }
      ).spec.ports.map((p) => [p.port, p.targetPort]);
    expect(ports('minimesh-dst')).toEqual([[8086, 8086]]);
    expect(ports('minimesh-dst-headless')).toEqual([[8086, 8086]]);
    expect(ports('minimesh-identity')).toEqual([[8080, 8080]]);
    expect(ports('minimesh-identity-headless')).toEqual([[8080, 8080]]);
    expect(ports('minimesh-injector')).toEqual([[443, 8443]]);
    expect(ports('minimesh-policy')).toEqual([[8090, 8090]]);
    expect(
      (findObject(objects, 'Service', 'minimesh-dst-headless') as unknown as { spec: { clusterIP: string } }).spec
        .clusterIP,
    ).toBe('None');
  });

  it('configures the webhook: pods CREATE, no side effects, v1, 10 s, Ignore, selectors, a CA bundle that verifies the serving cert', () => {
    const mwc = findObject(
      objects,
      'MutatingWebhookConfiguration',
      'minimesh-injector-webhook-config-minimesh',
    ) as unknown as { webhooks: Record<string, unknown>[] };
    expect(mwc.webhooks).toHaveLength(1);
    const wh = mwc.webhooks[0] as Record<string, unknown> & {
      clientConfig: { caBundle: string; service: Record<string, unknown> };
    };
    expect(wh.rules).toEqual([
      { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], scope: 'Namespaced' },
    ]);
    expect(wh.sideEffects).toBe('None');
    expect(wh.admissionReviewVersions).toEqual(['v1']);
    expect(wh.timeoutSeconds).toBe(10);
    expect(wh.failurePolicy).toBe('Ignore');
    expect(wh.clientConfig.service).toEqual({ name: 'minimesh-injector', namespace: NS, path: '/', port: 443 });
    expect(JSON.stringify(wh.namespaceSelector)).toContain(
      '"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","cert-manager","minimesh"]',
    );
    expect(wh.objectSelector).toEqual({
      matchExpressions: [{ key: 'minimesh.io/control-plane-component', operator: 'DoesNotExist' }],
    });
    const ca = new X509Certificate(Buffer.from(wh.clientConfig.caBundle, 'base64'));
    const secret = findObject(objects, 'Secret', 'minimesh-injector-k8s-tls') as unknown as {
      type: string;
      data: Record<string, string>;
    };
    expect(secret.type).toBe('kubernetes.io/tls');
    const leaf = new X509Certificate(Buffer.from(secret.data['tls.crt'] ?? '', 'base64'));
    expect(leaf.verify(ca.publicKey)).toBe(true);
    expect(leaf.subjectAltName).toContain('DNS:minimesh-injector.minimesh.svc');
    expect(Buffer.from(secret.data['ca.crt'] ?? '', 'base64').toString()).toBe(ca.toString());
  });

  it('uses the webhook certificate the user provides', async () => {
    const crt = readFileSync(certs.issuerCrt, 'utf8');
    const key = readFileSync(certs.issuerKey, 'utf8');
    const ca = readFileSync(certs.caCrt, 'utf8');
    const { objects: objs } = await render([
      ...certArgs(certs),
      '--set-file',
      `proxyInjector.crtPEM=${certs.issuerCrt}`,
      '--set-file',
      `proxyInjector.keyPEM=${certs.issuerKey}`,
      '--set-file',
      `proxyInjector.caBundle=${certs.caCrt}`,
    ]);
    const secret = findObject(objs, 'Secret', 'minimesh-injector-k8s-tls') as unknown as {
      data: Record<string, string>;
    };
    expect(Buffer.from(secret.data['tls.crt'] ?? '', 'base64').toString()).toBe(crt);
    expect(Buffer.from(secret.data['tls.key'] ?? '', 'base64').toString()).toBe(key);
    const mwc = findObject(
      objs,
      'MutatingWebhookConfiguration',
      'minimesh-injector-webhook-config-minimesh',
    ) as unknown as { webhooks: { clientConfig: { caBundle: string } }[] };
    expect(Buffer.from(mwc.webhooks[0]?.clientConfig.caBundle ?? '', 'base64').toString()).toBe(ca);
    const partial = await helmTemplate(NS, [
      ...certArgs(certs),
      '--set-file',
      `proxyInjector.crtPEM=${certs.issuerCrt}`,
    ]);
    expect(partial.code).not.toBe(0);
    expect(partial.stderr).toContain('set all three of proxyInjector.crtPEM');
  });
});

describe('HA values', () => {
  it('runs 3 replicas with PodDisruptionBudgets, anti-affinity and failurePolicy Fail', async () => {
    const { objects } = await render([...certArgs(certs), '-f', join(chartDir, 'values-ha.yaml')]);
    for (const name of ['minimesh-destination', 'minimesh-identity', 'minimesh-injector']) {
      const d = findObject(objects, 'Deployment', name) as unknown as {
        spec: { replicas: number; template: { spec: { affinity?: unknown } } };
      };
      expect(d.spec.replicas).toBe(3);
      expect(JSON.stringify(d.spec.template.spec.affinity)).toContain('"topologyKey":"kubernetes.io/hostname"');
    }
    expect(
      objects
        .filter((o) => o.kind === 'PodDisruptionBudget')
        .map((o) => o.metadata.name)
        .sort(),
    ).toEqual(['minimesh-destination', 'minimesh-identity', 'minimesh-injector']);
    const mwc = findObject(
      objects,
      'MutatingWebhookConfiguration',
      'minimesh-injector-webhook-config-minimesh',
    ) as unknown as { webhooks: { failurePolicy: string }[] };
    expect(mwc.webhooks[0]?.failurePolicy).toBe('Fail');
  });
});
