// Checks of the control plane's API objects: the API answers, the Deployments exist and are available,
// the webhook configuration exists with a CA bundle, each component's admin /ready answered 200. Each
// pure check (fetched objects in, results out) has its read beside it, at the end of the file.
import { X509Certificate } from 'node:crypto';
import { DEFAULT_PORTS } from '@minimesh/config';
import type { KubeClient } from '@minimesh/kube';
import { describeKubeError } from '../kube.js';
import { firstLine, getPodReady, type PodList } from './api-reads.js';
import { splitPemCertificates } from './certificates.js';
import { fail, ok, skip, warn, type CheckResult } from './types.js';

export const COMPONENTS = [
  { component: 'destination', deployment: 'minimesh-destination', adminPort: DEFAULT_PORTS.destinationAdmin },
  { component: 'identity', deployment: 'minimesh-identity', adminPort: DEFAULT_PORTS.identityAdmin },
  { component: 'injector', deployment: 'minimesh-injector', adminPort: DEFAULT_PORTS.injectorAdmin },
] as const;

export const WEBHOOK_CONFIG_PREFIX = 'minimesh-injector-webhook-config-';

export interface DeploymentLike {
  metadata?: { name?: string };
  spec?: { replicas?: number };
  status?: {
    replicas?: number;
    availableReplicas?: number;
    readyReplicas?: number;
    updatedReplicas?: number;
    conditions?: { type: string; status: string; message?: string; reason?: string }[];
  };
}

export interface WebhookConfigLike {
  metadata?: { name?: string };
  webhooks?: {
    name: string;
    clientConfig?: { caBundle?: string; service?: { name?: string; namespace?: string }; url?: string };
  }[];
}

export const CP_CATEGORY = 'minimesh-control-plane';
export const API_CATEGORY = 'kubernetes-api';
export const WEBHOOK_CATEGORY = 'minimesh-webhook';
export const READY_CATEGORY = 'minimesh-control-plane-ready';

export function checkApi(input: { server: string; error?: string; version?: string }): CheckResult[] {
  if (input.error !== undefined) {
    return [
      fail(
        API_CATEGORY,
        'can query the Kubernetes API',
        `${input.server}: ${input.error}`,
        'check --kubeconfig and that the cluster is running',
      ),
    ];
  }
  return [
    ok(API_CATEGORY, 'can query the Kubernetes API', `${input.server}${input.version ? ` (${input.version})` : ''}`),
  ];
}

export function checkNamespace(namespace: string, exists: boolean): CheckResult {
  return exists
    ? ok(CP_CATEGORY, `control-plane namespace ${namespace} exists`)
    : fail(
        CP_CATEGORY,
        `control-plane namespace ${namespace} exists`,
        `namespace ${namespace} not found`,
        'install the chart: helm upgrade --install minimesh charts/minimesh -n minimesh --create-namespace ...',
      );
}

/**
 * One result per component: the Deployment exists, and all its wanted replicas are available.
 * `unreadable`: Deployments the API would not return, with why.
 */
export function checkDeployments(
  namespace: string,
  deployments: Map<string, DeploymentLike | undefined>,
  unreadable: ReadonlyMap<string, string> = new Map(),
): CheckResult[] {
  const results: CheckResult[] = [];
  for (const c of COMPONENTS) {
    const d = deployments.get(c.deployment);
    const desc = `${c.component}: Deployment ${c.deployment} exists and is available`;
    const why = unreadable.get(c.deployment);
    if (why !== undefined) {
      results.push(fail(CP_CATEGORY, desc, `cannot read it: ${why}`));
      continue;
    }
    if (!d) {
      results.push(fail(CP_CATEGORY, desc, `Deployment ${namespace}/${c.deployment} not found`));
      continue;
    }
    const want = d.spec?.replicas ?? 1;
    const available = d.status?.availableReplicas ?? 0;
    const cond = d.status?.conditions?.find((x) => x.type === 'Available');
    if (want === 0) {
      results.push(fail(CP_CATEGORY, desc, `scaled to 0 replicas`));
    } else if (available === 0) {
      results.push({
        ...fail(
          CP_CATEGORY,
          desc,
          `0 of ${want} replicas available${cond?.message ? ` (${cond.message})` : ''}`,
          `kubectl -n ${namespace} describe deploy ${c.deployment}`,
        ),
        retry: true,
      });
    } else if (available < want) {
      results.push(warn(CP_CATEGORY, desc, `${available} of ${want} replicas available`));
    } else {
      results.push(ok(CP_CATEGORY, desc, `${available}/${want} available`));
    }
  }
  return results;
}

/** The MutatingWebhookConfiguration the chart renders for this namespace: present, pointing at the injector, with a CA bundle that parses. */
export function checkWebhook(
  namespace: string,
  configs: readonly WebhookConfigLike[],
  now: Date = new Date(),
): CheckResult[] {
  const name = `${WEBHOOK_CONFIG_PREFIX}${namespace}`;
  const cfg = configs.find((c) => c.metadata?.name === name);
  if (!cfg)
    return [
      fail(WEBHOOK_CATEGORY, `MutatingWebhookConfiguration ${name} exists`, 'not found: pods will not be injected'),
    ];
  const results: CheckResult[] = [ok(WEBHOOK_CATEGORY, `MutatingWebhookConfiguration ${name} exists`)];
  const hooks = cfg.webhooks ?? [];
  if (hooks.length === 0)
    return [...results, fail(WEBHOOK_CATEGORY, 'webhook configuration has a CA bundle', 'it lists no webhooks')];
  for (const h of hooks) {
    const bundle = h.clientConfig?.caBundle;
    const desc = `webhook ${h.name} has a CA bundle`;
    if (!bundle) {
      results.push(
        fail(WEBHOOK_CATEGORY, desc, 'clientConfig.caBundle is empty: the API server cannot verify the injector'),
      );
      continue;
    }
    const pem = Buffer.from(bundle, 'base64').toString('utf8');
    const blocks = splitPemCertificates(pem);
    if (blocks.length === 0) {
      results.push(fail(WEBHOOK_CATEGORY, desc, 'clientConfig.caBundle holds no PEM certificate'));
      continue;
    }
    try {
      const certs = blocks.map((b) => new X509Certificate(b));
      const expired = certs.filter((c) => Date.parse(c.validTo) <= now.getTime());
      if (expired.length > 0)
        results.push(
          fail(
            WEBHOOK_CATEGORY,
            desc,
            `the CA bundle expired on ${new Date(Date.parse((expired[0] as X509Certificate).validTo)).toISOString()}`,
          ),
        );
      else results.push(ok(WEBHOOK_CATEGORY, desc, `${certs.length} certificate(s)`));
    } catch (err) {
      results.push(fail(WEBHOOK_CATEGORY, desc, `clientConfig.caBundle: ${(err as Error).message}`));
      continue;
    }
    const svc = h.clientConfig?.service;
    if (svc && (svc.namespace !== namespace || svc.name !== 'minimesh-injector')) {
      results.push(
        warn(
          WEBHOOK_CATEGORY,
          `webhook ${h.name} calls the injector Service`,
          `it calls ${svc.namespace}/${svc.name}, not ${namespace}/minimesh-injector`,
        ),
      );
    }
  }
  return results;
}

export type ReadyProbe =
  | { component: string; pod: string; status: 'ready' }
  | { component: string; pod: string; status: 'not-ready'; detail: string }
  | { component: string; pod?: string; status: 'unreachable'; detail: string };

/** Admin /ready per component (through the API server's pod proxy): 200 ok; other answers fail; unreachable warns. */
export function checkReadiness(probes: readonly ReadyProbe[]): CheckResult[] {
  return probes.map((p) => {
    const desc = `${p.component} admin /ready${p.pod ? ` (${p.pod})` : ''}`;
    if (p.status === 'ready') return ok(READY_CATEGORY, desc);
    if (p.status === 'not-ready') return { ...fail(READY_CATEGORY, desc, p.detail), retry: true };
    return p.pod === undefined
      ? skip(READY_CATEGORY, desc, p.detail)
      : warn(READY_CATEGORY, desc, `not reachable: ${p.detail}`);
  });
}

// --- The reads (thin I/O: the API through the client, never throwing past a check) ---

/** GET /version: what checkApi needs. */
export async function readApi(
  client: KubeClient,
  server: string,
): Promise<{ server: string; version?: string; error?: string }> {
  try {
    const v = await client.requestOk<{ gitVersion?: string }>('GET', '/version', undefined, { timeoutMs: 10_000 });
    return { server, ...(v.gitVersion !== undefined ? { version: v.gitVersion } : {}) };
  } catch (err) {
    const detail = describeKubeError(err);
    return { server, error: detail.startsWith('no response within') ? 'GET /version: no answer within 10 s' : detail };
  }
}

/** The namespace check, and whether the namespace exists (the other checks need it). */
export async function namespaceCheck(
  client: KubeClient,
  namespace: string,
): Promise<{ result: CheckResult; exists: boolean }> {
  try {
    const exists = (await client.get(`/api/v1/namespaces/${namespace}`)) !== undefined;
    return { result: checkNamespace(namespace, exists), exists };
  } catch (err) {
    return {
      result: fail(CP_CATEGORY, `control-plane namespace ${namespace} exists`, describeKubeError(err)),
      exists: false,
    };
  }
}

export async function deploymentChecks(client: KubeClient, namespace: string): Promise<CheckResult[]> {
  const deployments = new Map<string, DeploymentLike | undefined>();
  const unreadable = new Map<string, string>();
  for (const c of COMPONENTS) {
    try {
      deployments.set(
        c.deployment,
        await client.get<DeploymentLike>(`/apis/apps/v1/namespaces/${namespace}/deployments/${c.deployment}`),
      );
    } catch (err) {
      unreadable.set(c.deployment, describeKubeError(err));
    }
  }
  return checkDeployments(namespace, deployments, unreadable);
}

export async function webhookChecks(client: KubeClient, namespace: string, now?: Date): Promise<CheckResult[]> {
  try {
    const cfg = await client.get<WebhookConfigLike>(
      `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${WEBHOOK_CONFIG_PREFIX}${namespace}`,
    );
    return checkWebhook(namespace, cfg ? [cfg] : [], now);
  } catch (err) {
    return [fail(WEBHOOK_CATEGORY, 'webhook configuration is readable', describeKubeError(err))];
  }
}

/** Every component's pods' admin /ready, all at once: the slowest probe bounds the wait, not their sum. */
export async function probeReadiness(client: KubeClient, namespace: string, timeoutMs: number): Promise<ReadyProbe[]> {
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
          const r = await getPodReady(client, namespace, name, c.adminPort, timeoutMs);
          if (r.status === 200) probes.push({ component: c.component, pod: name, status: 'ready' });
          // A Status object is the API server's own error (it could not reach the pod), not the component's answer.
          else if (r.status !== undefined && r.status >= 500 && !r.body.includes('"kind":"Status"'))
            probes.push({
              component: c.component,
              pod: name,
              status: 'not-ready',
              detail: `/ready on port ${c.adminPort} answered HTTP ${r.status}${r.body ? `: ${firstLine(r.body)}` : ''}`,
            });
          else
            probes.push({
              component: c.component,
              pod: name,
              status: 'unreachable',
              detail: r.error ?? `HTTP ${r.status}: ${firstLine(r.body)}`,
            });
        }),
      );
      return probes.sort((a, b) => (a.pod ?? '').localeCompare(b.pod ?? ''));
    }),
  );
  return perComponent.flat();
}
