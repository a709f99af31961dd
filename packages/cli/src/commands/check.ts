// minimesh check: what `linkerd check` does, briefly. Fetches the control plane's objects and
// hands them to the pure checks in src/check/; prints ✔/‼/✖ lines and exits 1 on any failure.
import type { KubeClient } from '@minimesh/kube';
import { POLICY_GROUP, POLICY_PORTS } from '@minimesh/policy';
import { outputFlag, parseFlags, parseOutputFormat, renderData, sleep, UsageError } from '@minimesh/runtime';
import { checkCertificates, DEFAULT_WARN_DAYS } from '../check/certificates.js';
import {
  checkCni,
  CNI_ADMIN_PORT,
  CNI_CATEGORY,
  CNI_DAEMONSET,
  type DaemonSetLike,
  type InstallerProbe,
  type InstallerStatusLike,
} from '../check/cni.js';
import { DEFAULT_PORTS, LABELS } from '@minimesh/config';
import {
  API_CATEGORY,
  checkApi,
  checkDeployments,
  checkNamespace,
  checkReadiness,
  checkWebhook,
  COMPONENTS,
  WEBHOOK_CONFIG_PREFIX,
  type DeploymentLike,
  type ReadyProbe,
  type WebhookConfigLike,
} from '../check/control-plane.js';
import { checkPolicy, POLICY_CATEGORY, type CrdLike, type PodLike as PolicyPodLike } from '../check/policy.js';
import { checkPreInstall, INSTALL_ACCESS, type AccessAnswer } from '../check/pre.js';
import { checkProxies, podKey, type MeshedPodLike } from '../check/proxy.js';
import { exitCodeOf, formatResults, useColor, type CheckResult } from '../check/types.js';
import type { CommandIO } from '../io.js';
import { clusterFlags, connectKube, describeKubeError } from '../kube.js';
import { clusterInfoFromArgs, loadPolicyState } from '../policy-cluster.js';
import { serverVersions } from './version.js';

const info = {
  name: 'minimesh check',
  summary:
    "check the installation: the API is reachable, the control-plane Deployments are available, the webhook has a CA bundle, the trust anchors and issuer are valid, chain and are not about to expire, each component answers /ready, and the policy CRDs are installed and the policy controller is ready; --pre: the cluster is ready for an install; --proxy: every meshed pod's proxy too",
  usage:
    'minimesh check [--pre | --proxy] [-n NAMESPACE] [--control-plane-namespace minimesh] [--wait 5m] [--kubeconfig K] [--context C] [--warn-days 60] [--policy-resources] [-o wide|json|yaml]',
};

const flags = {
  ...clusterFlags,
  namespace: {
    type: 'string',
    short: 'n',
    default: '',
    description:
      'the control-plane namespace (default minimesh); with --proxy, the data-plane namespace to check (default: every namespace)',
  },
  'control-plane-namespace': {
    type: 'string',
    short: 'L',
    default: '',
    description: 'the control-plane namespace (default: -n without --proxy, else minimesh)',
  },
  pre: {
    type: 'boolean',
    description:
      'check that the cluster is ready for an install instead: API version, access to create what the chart creates, no control plane in the namespace yet, NET_ADMIN allowed',
  },
  proxy: {
    type: 'boolean',
    description:
      "also check every meshed pod's proxy: ready, holding a valid certificate that chains to its trust anchors, at the control plane's version",
  },
  wait: {
    type: 'string',
    default: '5m',
    description:
      'run failing checks that may pass by themselves (rollouts, proxies starting) again until this much time has passed (0: once)',
  },
  'warn-days': {
    type: 'string',
    default: String(DEFAULT_WARN_DAYS),
    description: 'warn when a certificate expires within this many days',
  },
  'ready-timeout': { type: 'string', default: '5', description: 'seconds to wait for each /ready probe' },
  'policy-resources': {
    type: 'boolean',
    description:
      'also check the policy resources: malformed ones, policies whose target does not exist, Servers selecting no pod, ports two Servers claim',
  },
  output: {
    ...outputFlag(['table', 'wide', 'json', 'yaml']),
    description: 'output format: table (the check lines), wide (with what each passing check found), json or yaml',
  },
  json: { type: 'boolean', description: 'the same as -o json' },
} as const;

/** One GET through the API server, bounded by timeoutMs; never throws. */
async function getViaApiServer(
  client: KubeClient,
  path: string,
  timeoutMs: number,
  maxBody = 4096,
): Promise<{ status?: number; body: string; error?: string }> {
  try {
    const res = await client.request('GET', path, undefined, { timeoutMs, accept: '*/*' });
    const text = typeof res.body === 'string' ? res.body : res.body === undefined ? '' : JSON.stringify(res.body);
    return { status: res.status, body: text.slice(0, maxBody) };
  } catch (err) {
    const detail = describeKubeError(err);
    const pathname = path.split('?')[0] ?? path;
    return {
      body: '',
      error: `GET ${pathname}: ${detail.startsWith('no response within') ? `no answer within ${timeoutMs / 1000} s` : detail}`,
    };
  }
}

interface PodList {
  items: Array<{ metadata?: { name?: string; deletionTimestamp?: string }; status?: { phase?: string } }>;
}

async function probeReadiness(client: KubeClient, namespace: string, timeoutMs: number): Promise<ReadyProbe[]> {
  // All components and pods at once: the slowest probe bounds the wait, not their sum.
  const perComponent = await Promise.all(
    COMPONENTS.map(async (c): Promise<ReadyProbe[]> => {
      const probes: ReadyProbe[] = [];
      let pods;
      try {
        const selector = encodeURIComponent(`minimesh.io/control-plane-component=${c.component}`);
        pods = await client.requestOk<PodList>('GET', `/api/v1/namespaces/${namespace}/pods?labelSelector=${selector}`);
      } catch (err) {
        return [
          { component: c.component, status: 'unreachable', detail: `cannot list pods: ${describeKubeError(err)}` },
        ];
      }
      const running = pods.items.filter(
        (p) => p.status?.phase === 'Running' && p.metadata?.deletionTimestamp === undefined,
      );
      if (running.length === 0) return [{ component: c.component, status: 'unreachable', detail: 'no running pod' }];
      await Promise.all(
        running.map(async (pod) => {
          const name = pod.metadata?.name ?? '?';
          // Through the API server's pod proxy: works wherever the API server can reach pod IPs, and
          // sends nothing from this machine but to the API server; a probe that hangs is cut at the timeout.
          const r = await getViaApiServer(
            client,
            `/api/v1/namespaces/${namespace}/pods/${name}:${c.adminPort}/proxy/ready`,
            timeoutMs,
          );
          if (r.status === 200) probes.push({ component: c.component, pod: name, status: 'ready' });
          // A Status object is the API server's own error (it could not reach the pod), not the component's answer.
          else if (r.status !== undefined && r.status >= 500 && !r.body.includes('"kind":"Status"'))
            probes.push({
              component: c.component,
              pod: name,
              status: 'not-ready',
              detail: `/ready on port ${c.adminPort} answered HTTP ${r.status}${r.body ? `: ${r.body.trim().split('\n')[0]?.slice(0, 200)}` : ''}`,
            });
          else
            probes.push({
              component: c.component,
              pod: name,
              status: 'unreachable',
              detail: r.error ?? `HTTP ${r.status}: ${r.body.trim().split('\n')[0]?.slice(0, 200)}`,
            });
        }),
      );
      return probes.sort((a, b) => (a.pod ?? '').localeCompare(b.pod ?? ''));
    }),
  );
  return perComponent.flat();
}

export interface CheckOptions {
  /** The control-plane namespace (with --pre: where the install would go). */
  namespace: string;
  warnDays: number;
  readyTimeoutMs: number;
  policyResources?: boolean;
  /** 'pre': the cluster is ready for an install; 'proxy': the control plane and every meshed pod's proxy. */
  mode?: 'control-plane' | 'pre' | 'proxy';
  /** With mode 'proxy': the data-plane namespace (undefined: every namespace). */
  dataPlaneNamespace?: string;
  now?: Date;
}

export async function runChecks(
  opts: CheckOptions & {
    kubeconfig?: string;
    context?: string;
    /** Run again while every failure is one that may pass by itself, until this much time has passed. */
    waitMs?: number;
    /** Told before each new round (the command prints it on stderr). */
    onRetry?: (failing: CheckResult[], remainingMs: number) => void;
  },
): Promise<CheckResult[]> {
  let client: KubeClient;
  let server = '(no kubeconfig)';
  try {
    ({ client, server } = await connectKube(opts.kubeconfig, opts.context));
  } catch (err) {
    return checkApi({ server, error: (err as Error).message });
  }
  try {
    return await retryChecks(() => collectChecks(client, server, opts), {
      waitMs: opts.waitMs ?? 0,
      ...(opts.onRetry ? { onRetry: opts.onRetry } : {}),
    });
  } finally {
    await client.close();
  }
}

/**
 * `--wait`, as Linkerd's: runs the checks again while they fail only in ways that may pass by themselves
 * (results with retry set: replicas not yet available, a proxy still starting), with a growing pause
 * (1 s, doubling up to 10 s), until they pass or waitMs has passed. A failure that cannot pass by waiting
 * (a missing namespace, a certificate that does not chain) ends it at once.
 */
export async function retryChecks(
  run: () => Promise<CheckResult[]>,
  opts: {
    waitMs: number;
    onRetry?: (failing: CheckResult[], remainingMs: number) => void;
    clock?: () => number;
    pause?: (ms: number) => Promise<void>;
  },
): Promise<CheckResult[]> {
  const clock = opts.clock ?? Date.now;
  const pause = opts.pause ?? ((ms: number) => sleep(ms));
  const deadline = clock() + opts.waitMs;
  let delay = 1000;
  for (;;) {
    const results = await run();
    const failing = results.filter((r) => r.status === 'fail');
    const remaining = deadline - clock();
    if (failing.length === 0 || failing.some((r) => !r.retry) || remaining <= 0) return results;
    opts.onRetry?.(failing, remaining);
    await pause(Math.min(delay, remaining));
    delay = Math.min(delay * 2, 10_000);
  }
}

/** One round of checks with a connected client: the mode's checks (tests call this with a fake API). */
export async function collectChecks(client: KubeClient, server: string, opts: CheckOptions): Promise<CheckResult[]> {
  if (opts.mode === 'pre') return preChecks(client, server, opts.namespace);
  const results = await checksWith(client, server, opts);
  if (opts.mode !== 'proxy' || results.some((r) => r.category === API_CATEGORY && r.status === 'fail')) return results;
  return [...results, ...(await proxyChecks(client, opts))];
}

/** `--pre`: the API, its version, access to what the chart creates, no control plane yet, NET_ADMIN allowed. */
async function preChecks(client: KubeClient, server: string, ns: string): Promise<CheckResult[]> {
  let gitVersion: string;
  try {
    const v = await client.requestOk<{ gitVersion?: string }>('GET', '/version', undefined, { timeoutMs: 10_000 });
    gitVersion = v.gitVersion ?? '';
  } catch (err) {
    const detail = describeKubeError(err);
    return checkApi({
      server,
      error: detail.startsWith('no response within') ? 'GET /version: no answer within 10 s' : detail,
    });
  }
  const results = checkApi({ server, version: gitVersion });
  try {
    const nsObj = await client.get<{ metadata?: { labels?: Record<string, string> } }>(`/api/v1/namespaces/${ns}`);
    const selector = encodeURIComponent(LABELS.controlPlaneComponent);
    const all = await client.requestOk<{
      items: Array<{ metadata?: { name?: string; namespace?: string } }>;
    }>('GET', `/apis/apps/v1/deployments?labelSelector=${selector}`);
    const here = all.items.filter((d) => d.metadata?.namespace === ns).map((d) => d.metadata?.name ?? '?');
    const others = [...new Set(all.items.map((d) => d.metadata?.namespace ?? '?').filter((n) => n !== ns))].sort();
    const webhook = await client.get(
      `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${WEBHOOK_CONFIG_PREFIX}${ns}`,
    );
    const access = await Promise.all(
      INSTALL_ACCESS.map(async (a): Promise<AccessAnswer> => {
        try {
          const review = await client.requestOk<{ status?: { allowed?: boolean; reason?: string } }>(
            'POST',
            '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
            {
              apiVersion: 'authorization.k8s.io/v1',
              kind: 'SelfSubjectAccessReview',
              spec: {
                resourceAttributes: {
                  verb: 'create',
                  group: a.group,
                  resource: a.resource,
                  ...(a.namespaced ? { namespace: ns } : {}),
                },
              },
            },
          );
          return {
            kind: a.kind,
            allowed: review.status?.allowed === true,
            ...(review.status?.reason ? { reason: review.status.reason } : {}),
          };
        } catch (err) {
          return { kind: a.kind, error: describeKubeError(err) };
        }
      }),
    );
    // The real admission chain decides (Pod Security Admission, any policy webhook): a server-side dry
    // run of a pod with proxy-init's security context, in the namespace (or default while it does not exist).
    const target = nsObj ? ns : 'default';
    const psaEnforce = nsObj
      ? nsObj.metadata?.labels?.['pod-security.kubernetes.io/enforce']
      : (await client.get<{ metadata?: { labels?: Record<string, string> } }>('/api/v1/namespaces/default'))?.metadata
          ?.labels?.['pod-security.kubernetes.io/enforce'];
    const dry = await client.request('POST', `/api/v1/namespaces/${target}/pods?dryRun=All`, netAdminPod());
    const psaSelector = encodeURIComponent('pod-security.kubernetes.io/enforce in (baseline,restricted)');
    const enforcing = await client.requestOk<{
      items: Array<{ metadata?: { name?: string; labels?: Record<string, string> } }>;
    }>('GET', `/api/v1/namespaces?labelSelector=${psaSelector}`);
    const body = dry.body as { message?: string } | undefined;
    results.push(
      ...checkPreInstall({
        namespace: ns,
        kubernetesVersion: gitVersion,
        namespaceExists: nsObj !== undefined,
        existingControlPlane: here,
        ...(webhook ? { existingWebhook: `${WEBHOOK_CONFIG_PREFIX}${ns}` } : {}),
        otherControlPlanes: others,
        access,
        netAdmin: {
          namespace: target,
          allowed: dry.status >= 200 && dry.status < 300,
          ...(body?.message ? { message: body.message } : { message: `HTTP ${dry.status}` }),
          ...(psaEnforce ? { psaEnforce } : {}),
        },
        podSecurityNamespaces: enforcing.items.map((n) => ({
          name: n.metadata?.name ?? '?',
          level: n.metadata?.labels?.['pod-security.kubernetes.io/enforce'] ?? '?',
        })),
      }),
    );
  } catch (err) {
    results.push({
      category: 'pre-kubernetes-setup',
      description: 'the cluster is readable',
      status: 'fail',
      detail: describeKubeError(err),
    });
  }
  return results;
}

/** What proxy-init asks of a namespace: a root init container with NET_ADMIN and NET_RAW. Never created (dry run). */
function netAdminPod(): unknown {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { generateName: 'minimesh-pre-check-', labels: { 'app.kubernetes.io/name': 'minimesh-pre-check' } },
    spec: {
      initContainers: [
        {
          name: 'minimesh-init',
          image: 'ghcr.io/minimesh/proxy-init',
          securityContext: {
            capabilities: { add: ['NET_ADMIN', 'NET_RAW'], drop: ['ALL'] },
            runAsUser: 0,
            runAsNonRoot: false,
          },
        },
      ],
      containers: [{ name: 'app', image: 'ghcr.io/minimesh/proxy' }],
    },
  };
}

/** The --proxy part alone (tests). */
export const proxyChecksOnly = (client: KubeClient, opts: CheckOptions): Promise<CheckResult[]> =>
  proxyChecks(client, opts);

/** `--proxy`: every meshed pod of this control plane (in one namespace or all), its proxy's metrics, the certificates and versions. */
async function proxyChecks(client: KubeClient, opts: CheckOptions): Promise<CheckResult[]> {
  const cp = opts.namespace;
  const dp = opts.dataPlaneNamespace;
  const selector = encodeURIComponent(`${LABELS.controlPlaneNs}=${cp}`);
  let pods: MeshedPodLike[];
  try {
    pods = (
      await client.requestOk<{ items: MeshedPodLike[] }>(
        'GET',
        `/api/v1${dp ? `/namespaces/${dp}` : ''}/pods?labelSelector=${selector}`,
      )
    ).items;
  } catch (err) {
    return [
      {
        category: 'minimesh-data-plane',
        description: 'data-plane pods are readable',
        status: 'fail',
        detail: describeKubeError(err),
      },
    ];
  }
  // The control plane's own pods are meshed too; they are checked with the rest.
  const metrics = new Map<string, { text?: string; error?: string }>();
  await Promise.all(
    pods
      .filter((p) => p.metadata?.deletionTimestamp === undefined && p.status?.phase === 'Running')
      .map(async (p) => {
        const r = await getViaApiServer(
          client,
          `/api/v1/namespaces/${p.metadata?.namespace}/pods/${p.metadata?.name}:${DEFAULT_PORTS.admin}/proxy/metrics`,
          opts.readyTimeoutMs,
          1 << 20,
        );
        metrics.set(
          podKey(p),
          r.status === 200
            ? { text: r.body }
            : {
                error: r.error ?? `/metrics answered HTTP ${r.status}: ${r.body.trim().split('\n')[0]?.slice(0, 200)}`,
              },
        );
      }),
  );
  const read = async <T>(path: string): Promise<T | undefined> => client.get<T>(path).catch(() => undefined);
  const cm = await read<{ data?: Record<string, string> }>(
    `/api/v1/namespaces/${cp}/configmaps/minimesh-identity-trust-roots`,
  );
  const secret = await read<{ data?: Record<string, string> }>(
    `/api/v1/namespaces/${cp}/secrets/minimesh-identity-issuer`,
  );
  const crt = secret?.data?.['crt.pem'];
  const deployments = await client
    .requestOk<{ items: Array<{ metadata?: { name?: string; labels?: Record<string, string> } }> }>(
      'GET',
      `/apis/apps/v1/namespaces/${cp}/deployments?labelSelector=${selector}`,
    )
    .catch(() => ({ items: [] }));
  return checkProxies({
    namespace: dp,
    pods,
    metrics,
    controlPlaneVersions: serverVersions(deployments)
      .map((v) => v.version)
      .filter((v) => v !== 'unknown'),
    trustAnchorsPem: cm?.data?.['ca-bundle.crt'],
    issuerCrtPem: crt !== undefined ? Buffer.from(crt, 'base64').toString('utf8') : undefined,
    ...(opts.now ? { now: opts.now } : {}),
  });
}

async function checksWith(client: KubeClient, server: string, opts: CheckOptions): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  try {
    const v = await client.requestOk<{ gitVersion?: string }>('GET', '/version', undefined, { timeoutMs: 10_000 });
    results.push(...checkApi({ server, ...(v.gitVersion !== undefined ? { version: v.gitVersion } : {}) }));
  } catch (err) {
    const detail = describeKubeError(err);
    results.push(
      ...checkApi({
        server,
        error: detail.startsWith('no response within') ? 'GET /version: no answer within 10 s' : detail,
      }),
    );
    return results;
  }
  const ns = opts.namespace;
  const nsObj = await client.get(`/api/v1/namespaces/${ns}`).catch((err: unknown) => err as Error);
  if (nsObj instanceof Error) {
    results.push({
      category: 'minimesh-control-plane',
      description: `control-plane namespace ${ns} exists`,
      status: 'fail',
      detail: describeKubeError(nsObj),
    });
    return results;
  }
  results.push(checkNamespace(ns, nsObj !== undefined));
  if (!nsObj) return results;

  const deployments = new Map<string, DeploymentLike | undefined>();
  const unreadable = new Map<string, string>();
  for (const c of COMPONENTS) {
    try {
      deployments.set(
        c.deployment,
        await client.get<DeploymentLike>(`/apis/apps/v1/namespaces/${ns}/deployments/${c.deployment}`),
      );
    } catch (err) {
      unreadable.set(c.deployment, describeKubeError(err));
    }
  }
  const deploymentResults = checkDeployments(ns, deployments);
  COMPONENTS.forEach((c, i) => {
    const why = unreadable.get(c.deployment);
    const r = deploymentResults[i] as CheckResult;
    results.push(why === undefined ? r : { ...r, status: 'fail', detail: `cannot read it: ${why}` });
  });

  try {
    const cfg = await client.get<WebhookConfigLike>(
      `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${WEBHOOK_CONFIG_PREFIX}${ns}`,
    );
    results.push(...checkWebhook(ns, cfg ? [cfg] : [], opts.now));
  } catch (err) {
    results.push({
      category: 'minimesh-webhook',
      description: 'webhook configuration is readable',
      status: 'fail',
      detail: describeKubeError(err),
    });
  }

  let trustAnchorsPem: string | undefined;
  let trustAnchorsMissing: string | undefined;
  try {
    const cm = await client.get<{ data?: Record<string, string> }>(
      `/api/v1/namespaces/${ns}/configmaps/minimesh-identity-trust-roots`,
    );
    trustAnchorsPem = cm?.data?.['ca-bundle.crt'];
    if (cm && trustAnchorsPem === undefined)
      trustAnchorsMissing = 'ConfigMap minimesh-identity-trust-roots has no ca-bundle.crt';
  } catch (err) {
    trustAnchorsMissing = `ConfigMap minimesh-identity-trust-roots: ${describeKubeError(err)}`;
  }
  let issuerCrtPem: string | undefined;
  let issuerKeyPem: string | undefined;
  let issuerMissing: string | undefined;
  try {
    const secret = await client.get<{ data?: Record<string, string> }>(
      `/api/v1/namespaces/${ns}/secrets/minimesh-identity-issuer`,
    );
    const crt = secret?.data?.['crt.pem'];
    const key = secret?.data?.['key.pem'];
    if (crt !== undefined) issuerCrtPem = Buffer.from(crt, 'base64').toString('utf8');
    else if (secret) issuerMissing = 'Secret minimesh-identity-issuer has no crt.pem';
    if (key !== undefined) issuerKeyPem = Buffer.from(key, 'base64').toString('utf8');
  } catch (err) {
    issuerMissing = `Secret minimesh-identity-issuer: ${describeKubeError(err)}`;
  }
  results.push(
    ...checkCertificates({
      trustAnchorsPem,
      issuerCrtPem,
      ...(issuerKeyPem !== undefined ? { issuerKeyPem } : {}),
      ...(trustAnchorsMissing !== undefined ? { trustAnchorsMissing } : {}),
      ...(issuerMissing !== undefined ? { issuerMissing } : {}),
      warnWithinDays: opts.warnDays,
      ...(opts.now ? { now: opts.now } : {}),
    }),
  );

  results.push(...checkReadiness(await probeReadiness(client, ns, opts.readyTimeoutMs)));
  results.push(...(await policyChecks(client, ns, opts.readyTimeoutMs, opts.policyResources ?? false)));
  results.push(...(await cniChecks(client, ns, opts.readyTimeoutMs)));
  return results;
}

/** CNI mode: the mesh configuration's cni.enabled, the DaemonSet, and each installer's /status. */
async function cniChecks(client: KubeClient, ns: string, timeoutMs: number): Promise<CheckResult[]> {
  let enabled = false;
  let daemonSet: DaemonSetLike | undefined;
  let installers: InstallerProbe[] = [];
  let nodes: string[] | undefined;
  try {
    const cm = await client.get<{ data?: Record<string, string> }>(
      `/api/v1/namespaces/${ns}/configmaps/minimesh-config`,
    );
    const text = cm?.data?.['config.json'];
    if (text) enabled = (JSON.parse(text) as { cni?: { enabled?: boolean } }).cni?.enabled === true;
    daemonSet = await client.get<DaemonSetLike>(`/apis/apps/v1/namespaces/${ns}/daemonsets/${CNI_DAEMONSET}`);
    if (!enabled && !daemonSet) return [];
    const selector = encodeURIComponent('minimesh.io/control-plane-component=cni');
    const pods = await client.requestOk<{
      items: Array<{ metadata?: { name?: string; deletionTimestamp?: string }; spec?: { nodeName?: string } }>;
    }>('GET', `/api/v1/namespaces/${ns}/pods?labelSelector=${selector}`);
    installers = await Promise.all(
      pods.items
        .filter((p) => p.metadata?.deletionTimestamp === undefined && p.spec?.nodeName)
        .map(async (p): Promise<InstallerProbe> => {
          const pod = p.metadata?.name ?? '?';
          const node = p.spec?.nodeName ?? '?';
          const r = await getViaApiServer(
            client,
            `/api/v1/namespaces/${ns}/pods/${pod}:${CNI_ADMIN_PORT}/proxy/status`,
            timeoutMs,
          );
          if (r.status !== 200) return { pod, node, error: r.error ?? `/status answered HTTP ${r.status}` };
          try {
            return { pod, node, status: JSON.parse(r.body) as InstallerStatusLike };
          } catch {
            return { pod, node, error: `/status is not JSON: ${r.body.slice(0, 100)}` };
          }
        }),
    );
    try {
      const list = await client.requestOk<{ items: Array<{ metadata?: { name?: string } }> }>('GET', '/api/v1/nodes');
      nodes = list.items.map((n) => n.metadata?.name ?? '?');
    } catch {
      nodes = undefined;
    }
  } catch (err) {
    return [
      {
        category: CNI_CATEGORY,
        description: 'the minimesh-cni DaemonSet is readable',
        status: 'fail',
        detail: describeKubeError(err),
      },
    ];
  }
  return checkCni({ namespace: ns, enabled, daemonSet, nodes, installers });
}

/** The policy controller's part: its CRDs, its container in each destination pod, and the policy resources. */
async function policyChecks(
  client: KubeClient,
  ns: string,
  timeoutMs: number,
  withResources: boolean,
): Promise<CheckResult[]> {
  let crds: CrdLike[];
  let pods: PodList['items'];
  try {
    const list = await client.requestOk<{ items?: CrdLike[] }>(
      'GET',
      '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
    );
    crds = (list.items ?? []).filter((c) => c.metadata?.name?.endsWith(`.${POLICY_GROUP}`));
    const selector = encodeURIComponent('minimesh.io/control-plane-component=destination');
    pods = (
      await client.requestOk<PodList>('GET', `/api/v1/namespaces/${ns}/pods?labelSelector=${selector}`)
    ).items.filter((p) => p.metadata?.deletionTimestamp === undefined);
  } catch (err) {
    return [
      {
        category: POLICY_CATEGORY,
        description: 'policy CRDs and controller are readable',
        status: 'fail',
        detail: describeKubeError(err),
      },
    ];
  }
  const ready = new Map<string, { ok: boolean; detail?: string }>();
  await Promise.all(
    pods.map(async (p) => {
      const name = p.metadata?.name ?? '?';
      const r = await getViaApiServer(
        client,
        `/api/v1/namespaces/${ns}/pods/${name}:${POLICY_PORTS.admin}/proxy/ready`,
        timeoutMs,
      );
      ready.set(
        name,
        r.status === 200
          ? { ok: true }
          : {
              ok: false,
              detail:
                r.error ??
                `/ready on port ${POLICY_PORTS.admin} answered HTTP ${r.status}: ${r.body.trim().split('\n')[0]?.slice(0, 200)}`,
            },
      );
    }),
  );
  // The resources themselves (malformed, dangling, conflicting) only with --policy-resources: as with
  // `linkerd check`, a plain check is about the installation, not about what users have applied.
  if (!withResources)
    return checkPolicy({ crds, destinationPods: pods as PolicyPodLike[], ready, cluster: clusterInfoFromArgs([], ns) });
  const state = await loadPolicyState(client, { controlPlaneNamespace: ns });
  const results = checkPolicy({
    crds,
    destinationPods: pods as PolicyPodLike[],
    ready,
    objects: state.objects,
    cluster: state.cluster,
  });
  for (const n of state.notes)
    results.push({
      category: POLICY_CATEGORY,
      description: 'policy resources are readable',
      status: 'warn',
      detail: n,
    });
  return results;
}

/** A duration as Linkerd and Go write it: 300ms, 30s, 5m, 1h, 1m30s; 0 is "no wait". Milliseconds. */
export function parseDuration(text: string): number | undefined {
  if (text === '0') return 0;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0;
  let m: RegExpExecArray | null;
  let end = 0;
  while ((m = re.exec(text)) !== null) {
    total += Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
    end = re.lastIndex;
  }
  return end === text.length && end > 0 ? total : undefined;
}

const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export async function checkCommand(argv: string[], io: CommandIO): Promise<number> {
  const parsed = parseFlags(info, flags, argv);
  if ('help' in parsed) {
    io.stdout.write(parsed.help);
    return 0;
  }
  if (parsed.positionals.length > 0)
    throw new UsageError(`${info.name}: unexpected argument ${JSON.stringify(parsed.positionals[0])}`);
  const f = parsed.values;
  if (f.pre && f.proxy) throw new UsageError(`${info.name}: --pre and --proxy cannot be used together`);
  for (const flag of ['namespace', 'control-plane-namespace'] as const)
    if (f[flag] !== '' && !NAME.test(f[flag]))
      throw new UsageError(
        `${info.name}: --${flag} ${JSON.stringify(f[flag])} is not valid: expected a namespace name`,
      );
  if (!/^\d+$/.test(f['warn-days']))
    throw new UsageError(
      `${info.name}: --warn-days ${JSON.stringify(f['warn-days'])} is not valid: expected a whole number of days`,
    );
  if (!/^\d+(\.\d+)?$/.test(f['ready-timeout']) || Number(f['ready-timeout']) <= 0)
    throw new UsageError(
      `${info.name}: --ready-timeout ${JSON.stringify(f['ready-timeout'])} is not valid: expected seconds > 0`,
    );
  const waitMs = parseDuration(f.wait);
  if (waitMs === undefined)
    throw new UsageError(
      `${info.name}: --wait ${JSON.stringify(f.wait)} is not valid: expected a duration such as 30s, 5m or 1m30s (0: no wait)`,
    );
  const output = f.json ? 'json' : parseOutputFormat(info.name, f.output, ['table', 'wide', 'json', 'yaml']);
  // Linkerd's names: with --proxy, -n is the data plane's namespace and the control plane's is -L.
  const controlPlane = f['control-plane-namespace'] || (f.proxy ? 'minimesh' : f.namespace || 'minimesh');
  const results = await runChecks({
    ...(f.kubeconfig !== '' ? { kubeconfig: f.kubeconfig } : {}),
    ...(f.context !== '' ? { context: f.context } : {}),
    namespace: controlPlane,
    mode: f.pre ? 'pre' : f.proxy ? 'proxy' : 'control-plane',
    ...(f.proxy && f.namespace !== '' ? { dataPlaneNamespace: f.namespace } : {}),
    warnDays: Number(f['warn-days']),
    readyTimeoutMs: Number(f['ready-timeout']) * 1000,
    policyResources: f['policy-resources'],
    waitMs,
    onRetry: (failing, remaining) =>
      io.stderr.write(
        `${info.name}: waiting for ${failing.length} check(s) (${failing[0]?.description}: ${failing[0]?.detail ?? ''}), ${Math.ceil(remaining / 1000)} s left\n`,
      ),
  });
  io.stdout.write(
    output === 'json' || output === 'yaml'
      ? renderData(output, { results, ok: exitCodeOf(results) === 0 })
      : formatResults(results, { color: useColor(io.stdout as { isTTY?: boolean }), wide: output === 'wide' }),
  );
  return exitCodeOf(results);
}
