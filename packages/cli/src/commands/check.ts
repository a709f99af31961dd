// minimesh check: what `linkerd check` does, briefly. Fetches the control plane's objects and
// hands them to the pure checks in src/check/; prints ✔/‼/✖ lines and exits 1 on any failure.
import type { KubeClient } from '@minimesh/kube';
import { POLICY_GROUP, POLICY_PORTS } from '@minimesh/policy';
import { parseFlags, UsageError } from '@minimesh/runtime';
import { checkCertificates, DEFAULT_WARN_DAYS } from '../check/certificates.js';
import {
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
import { exitCodeOf, formatResults, useColor, type CheckResult } from '../check/types.js';
import type { CommandIO } from '../io.js';
import { clusterFlags, connectKube, describeKubeError } from '../kube.js';
import { clusterInfoFromArgs, loadPolicyState } from '../policy-cluster.js';

const info = {
  name: 'minimesh check',
  summary:
    'check the installation: the API is reachable, the control-plane Deployments are available, the webhook has a CA bundle, the trust anchors and issuer are valid, chain and are not about to expire, each component answers /ready, and the policy CRDs are installed and the policy controller is ready',
  usage: 'minimesh check [-n minimesh] [--kubeconfig K] [--context C] [--warn-days 60] [--policy-resources] [-o json]',
};

const flags = {
  ...clusterFlags,
  namespace: { type: 'string', short: 'n', default: 'minimesh', description: 'the control-plane namespace' },
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
  output: { type: 'string', short: 'o', default: '', description: 'json for the results as JSON (default: lines)' },
  json: { type: 'boolean', description: 'the same as -o json' },
} as const;

/** One GET through the API server, bounded by timeoutMs; never throws. */
async function getViaApiServer(
  client: KubeClient,
  path: string,
  timeoutMs: number,
): Promise<{ status?: number; body: string; error?: string }> {
  try {
    const res = await client.request('GET', path, undefined, { timeoutMs, accept: '*/*' });
    const text = typeof res.body === 'string' ? res.body : res.body === undefined ? '' : JSON.stringify(res.body);
    return { status: res.status, body: text.slice(0, 4096) };
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

export async function runChecks(opts: {
  kubeconfig?: string;
  context?: string;
  namespace: string;
  warnDays: number;
  readyTimeoutMs: number;
  policyResources?: boolean;
  now?: Date;
}): Promise<CheckResult[]> {
  let client: KubeClient;
  let server = '(no kubeconfig)';
  try {
    ({ client, server } = await connectKube(opts.kubeconfig, opts.context));
  } catch (err) {
    return checkApi({ server, error: (err as Error).message });
  }
  try {
    return await checksWith(client, server, opts);
  } finally {
    await client.close();
  }
}

async function checksWith(
  client: KubeClient,
  server: string,
  opts: { namespace: string; warnDays: number; readyTimeoutMs: number; policyResources?: boolean; now?: Date },
): Promise<CheckResult[]> {
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
  return results;
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

export async function checkCommand(argv: string[], io: CommandIO): Promise<number> {
  const parsed = parseFlags(info, flags, argv);
  if ('help' in parsed) {
    io.stdout.write(parsed.help);
    return 0;
  }
  if (parsed.positionals.length > 0)
    throw new UsageError(`${info.name}: unexpected argument ${JSON.stringify(parsed.positionals[0])}`);
  const f = parsed.values;
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(f.namespace))
    throw new UsageError(
      `${info.name}: --namespace ${JSON.stringify(f.namespace)} is not valid: expected a namespace name`,
    );
  if (!/^\d+$/.test(f['warn-days']))
    throw new UsageError(
      `${info.name}: --warn-days ${JSON.stringify(f['warn-days'])} is not valid: expected a whole number of days`,
    );
  if (!/^\d+(\.\d+)?$/.test(f['ready-timeout']) || Number(f['ready-timeout']) <= 0)
    throw new UsageError(
      `${info.name}: --ready-timeout ${JSON.stringify(f['ready-timeout'])} is not valid: expected seconds > 0`,
    );
  if (f.output !== '' && f.output !== 'json')
    throw new UsageError(`${info.name}: -o ${JSON.stringify(f.output)} is not valid: expected json`);
  const json = f.json || f.output === 'json';
  const results = await runChecks({
    ...(f.kubeconfig !== '' ? { kubeconfig: f.kubeconfig } : {}),
    ...(f.context !== '' ? { context: f.context } : {}),
    namespace: f.namespace,
    warnDays: Number(f['warn-days']),
    readyTimeoutMs: Number(f['ready-timeout']) * 1000,
    policyResources: f['policy-resources'],
  });
  io.stdout.write(
    json
      ? `${JSON.stringify({ results, ok: exitCodeOf(results) === 0 }, null, 2)}\n`
      : formatResults(results, { color: useColor(io.stdout as { isTTY?: boolean }) }),
  );
  return exitCodeOf(results);
}
