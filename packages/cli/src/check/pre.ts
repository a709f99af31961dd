// `minimesh check --pre`: is the cluster ready for an install (Linkerd's pre-checks, the ones that apply
// here)? The checks are pure (what was fetched in, results out); their read is beside them, at the end
// of the file.
import { LABELS } from '@minimesh/config';
import type { KubeClient } from '@minimesh/kube';
import { describeKubeError } from '../kube.js';
import { checkApi, readApi, WEBHOOK_CONFIG_PREFIX } from './control-plane.js';
import { fail, ok, warn, type CheckResult } from './types.js';

export const PRE_CATEGORY = 'pre-kubernetes-setup';
export const VERSION_CATEGORY = 'kubernetes-version';
export const CAPABILITY_CATEGORY = 'pre-kubernetes-capability';

/** Below this the chart's admission and RBAC APIs are missing (Linkerd's minimum). */
export const MIN_KUBERNETES = [1, 22] as const;
/** Native sidecars (the chart's proxy.nativeSidecar: true) need this. */
export const NATIVE_SIDECAR_KUBERNETES = [1, 29] as const;

/** What the chart creates, and where: each must be allowed to the installing user. */
export const INSTALL_ACCESS: readonly { group: string; resource: string; kind: string; namespaced: boolean }[] = [
  { group: '', resource: 'namespaces', kind: 'Namespaces', namespaced: false },
  {
    group: 'apiextensions.k8s.io',
    resource: 'customresourcedefinitions',
    kind: 'CustomResourceDefinitions',
    namespaced: false,
  },
  { group: 'rbac.authorization.k8s.io', resource: 'clusterroles', kind: 'ClusterRoles', namespaced: false },
  {
    group: 'rbac.authorization.k8s.io',
    resource: 'clusterrolebindings',
    kind: 'ClusterRoleBindings',
    namespaced: false,
  },
  {
    group: 'admissionregistration.k8s.io',
    resource: 'mutatingwebhookconfigurations',
    kind: 'MutatingWebhookConfigurations',
    namespaced: false,
  },
  { group: 'rbac.authorization.k8s.io', resource: 'roles', kind: 'Roles', namespaced: true },
  { group: 'rbac.authorization.k8s.io', resource: 'rolebindings', kind: 'RoleBindings', namespaced: true },
  { group: '', resource: 'serviceaccounts', kind: 'ServiceAccounts', namespaced: true },
  { group: '', resource: 'services', kind: 'Services', namespaced: true },
  { group: '', resource: 'configmaps', kind: 'ConfigMaps', namespaced: true },
  { group: '', resource: 'secrets', kind: 'Secrets', namespaced: true },
  { group: 'apps', resource: 'deployments', kind: 'Deployments', namespaced: true },
  { group: 'policy', resource: 'poddisruptionbudgets', kind: 'PodDisruptionBudgets', namespaced: true },
];

export interface AccessAnswer {
  kind: string;
  /** Set when the access review itself could not be made. */
  error?: string;
  allowed?: boolean;
  reason?: string;
}

export interface PreCheckInput {
  /** The control-plane namespace the install would use. */
  namespace: string;
  /** GET /version's gitVersion, e.g. v1.33.13. */
  kubernetesVersion: string;
  namespaceExists: boolean;
  /** Deployments in the target namespace labelled as a minimesh control plane. */
  existingControlPlane: string[];
  /** The webhook configuration the chart would create for this namespace, when it is already there. */
  existingWebhook?: string;
  /** Other namespaces that run a minimesh control plane (a second mesh beside one is allowed, but worth a word). */
  otherControlPlanes: string[];
  access: AccessAnswer[];
  /** A server-side dry run of a pod with proxy-init's capabilities in the target namespace (or default). */
  netAdmin: { namespace: string; allowed: boolean; message?: string; psaEnforce?: string };
  /** Namespaces labelled pod-security.kubernetes.io/enforce baseline or restricted. */
  podSecurityNamespaces?: { name: string; level: string }[];
}

/** "v1.33.13" or "v1.29.0-gke.1" → [1, 33]; undefined when it does not parse. */
export function parseKubernetesVersion(v: string): [number, number] | undefined {
  const m = /^v?(\d+)\.(\d+)/.exec(v.trim());
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

const below = (v: readonly [number, number], min: readonly [number, number]): boolean =>
  v[0] < min[0] || (v[0] === min[0] && v[1] < min[1]);

export function checkKubernetesVersion(gitVersion: string): CheckResult[] {
  const desc = 'is running the minimum Kubernetes API version';
  const v = parseKubernetesVersion(gitVersion);
  if (!v) return [fail(VERSION_CATEGORY, desc, `cannot read the version ${JSON.stringify(gitVersion)}`)];
  if (below(v, MIN_KUBERNETES))
    return [fail(VERSION_CATEGORY, desc, `${gitVersion} is older than the minimum v${MIN_KUBERNETES.join('.')}`)];
  const results = [ok(VERSION_CATEGORY, desc, gitVersion)];
  results.push(
    below(v, NATIVE_SIDECAR_KUBERNETES)
      ? warn(
          VERSION_CATEGORY,
          'supports native sidecars',
          `${gitVersion} is older than v${NATIVE_SIDECAR_KUBERNETES.join('.')}: the proxy cannot run as a native sidecar`,
          'install with --set proxy.nativeSidecar=false',
        )
      : ok(VERSION_CATEGORY, 'supports native sidecars', gitVersion),
  );
  return results;
}

export function checkPreInstall(input: PreCheckInput): CheckResult[] {
  const ns = input.namespace;
  const results: CheckResult[] = [...checkKubernetesVersion(input.kubernetesVersion)];

  // Linkerd fails when its namespace exists at all; here the namespace may be made in advance (for its
  // labels), so what must not be there is a control plane.
  const found = [
    ...input.existingControlPlane.map((d) => `Deployment ${ns}/${d}`),
    ...(input.existingWebhook ? [`MutatingWebhookConfiguration ${input.existingWebhook}`] : []),
  ];
  results.push(
    found.length > 0
      ? fail(
          PRE_CATEGORY,
          `no minimesh control plane is installed in namespace ${ns}`,
          `found ${found.join(', ')}`,
          `this is an upgrade, not an install: minimesh check -n ${ns}, then helm upgrade`,
        )
      : ok(
          PRE_CATEGORY,
          `no minimesh control plane is installed in namespace ${ns}`,
          input.namespaceExists
            ? `namespace ${ns} exists, without a control plane`
            : `namespace ${ns} does not exist yet`,
        ),
  );
  if (input.otherControlPlanes.length > 0)
    results.push(
      warn(
        PRE_CATEGORY,
        'no other minimesh control plane runs in the cluster',
        `control planes in ${input.otherControlPlanes.join(', ')}: the CRDs are shared, and each webhook must select its own namespaces`,
      ),
    );

  for (const a of input.access) {
    const desc = `can create ${a.kind}`;
    if (a.error !== undefined) results.push(fail(PRE_CATEGORY, desc, `SelfSubjectAccessReview: ${a.error}`));
    else if (a.allowed) results.push(ok(PRE_CATEGORY, desc));
    else
      results.push(
        fail(
          PRE_CATEGORY,
          desc,
          `not allowed${a.reason ? `: ${a.reason}` : ''}`,
          'install as a cluster administrator (the chart creates cluster-scoped objects)',
        ),
      );
  }

  const n = input.netAdmin;
  const capDesc = `pods in namespace ${n.namespace} may have the NET_ADMIN and NET_RAW capabilities (proxy-init)`;
  results.push(
    n.allowed
      ? ok(
          CAPABILITY_CATEGORY,
          capDesc,
          `a dry-run pod with them was admitted${n.psaEnforce ? ` (pod-security enforce=${n.psaEnforce})` : ''}`,
        )
      : fail(
          CAPABILITY_CATEGORY,
          capDesc,
          `a dry-run pod with them was refused: ${n.message ?? 'no reason given'}`,
          n.psaEnforce && n.psaEnforce !== 'privileged'
            ? `the namespace enforces Pod Security "${n.psaEnforce}": label it pod-security.kubernetes.io/enforce=privileged (the control plane's own pods keep proxy-init, also in CNI mode)`
            : 'allow NET_ADMIN and NET_RAW for proxy-init in this namespace',
        ),
  );
  // Application namespaces that enforce baseline or restricted refuse proxy-init's init container:
  // there, CNI mode (no capability in the pod) is what meshes pods.
  const enforcing = (input.podSecurityNamespaces ?? []).filter((x) => x.name !== ns);
  const psaDesc = 'meshed pods are admitted where Pod Security is enforced';
  results.push(
    enforcing.length === 0
      ? ok(CAPABILITY_CATEGORY, psaDesc, 'no namespace enforces Pod Security baseline or restricted')
      : warn(
          CAPABILITY_CATEGORY,
          psaDesc,
          `${enforcing.map((x) => `${x.name} (${x.level})`).join(', ')} enforce${enforcing.length === 1 ? 's' : ''} Pod Security that refuses proxy-init's NET_ADMIN init container: pods meshed there would not be admitted`,
          'install in CNI mode, --set cni.enabled=true: the minimesh-cni DaemonSet writes the rules, and meshed pods need no capability (docs/cni.md)',
        ),
  );
  return results;
}

// --- The read (thin I/O) ---

/** `--pre`: the API, its version, access to what the chart creates, no control plane yet, NET_ADMIN allowed. */
export async function preChecks(client: KubeClient, server: string, ns: string): Promise<CheckResult[]> {
  const api = await readApi(client, server);
  if (api.error !== undefined) return checkApi(api);
  const gitVersion = api.version ?? '';
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
    results.push(fail(PRE_CATEGORY, 'the cluster is readable', describeKubeError(err)));
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
