// `minimesh check --proxy`: every meshed pod's proxy (Linkerd's data-plane checks). The check is pure:
// the pods, what each proxy's admin /metrics said (read through the API server's pod proxy, as
// `diagnostics proxy-metrics` does) and the control plane's certificates and version in; one result per
// check, naming the pods that fail it. Its read is beside it, at the end of the file.
import type { X509Certificate } from 'node:crypto';
import { ANNOTATIONS, CONTAINER_NAMES, DEFAULT_PORTS, LABELS, PROXY_ENV } from '@minimesh/config';
import type { KubeClient } from '@minimesh/kube';
import { serverVersions } from '../commands/version.js';
import { describeKubeError } from '../kube.js';
import { firstLine, getViaApiServer } from './api-reads.js';
import { cn, parseAll, readCertificates } from './certificates.js';
import { fail, ok, skip, warn, type CheckResult } from './types.js';

export const DATA_PLANE_CATEGORY = 'minimesh-data-plane';
export const CERT_EXPIRY_METRIC = 'control_identity_cert_expiration_timestamp_seconds';

interface ContainerLike {
  name?: string;
  image?: string;
  env?: { name?: string; value?: string }[];
}
interface ContainerStatusLike {
  name?: string;
  ready?: boolean;
  started?: boolean;
  restartCount?: number;
  state?: { waiting?: { reason?: string; message?: string }; terminated?: { reason?: string } };
}

export interface MeshedPodLike {
  metadata?: {
    name?: string;
    namespace?: string;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
    deletionTimestamp?: string;
  };
  spec?: { initContainers?: ContainerLike[]; containers?: ContainerLike[] };
  status?: { phase?: string; initContainerStatuses?: ContainerStatusLike[]; containerStatuses?: ContainerStatusLike[] };
}

export interface ProxyCheckInput {
  /** The data-plane namespace, or undefined for every namespace. */
  namespace: string | undefined;
  /** Pods labelled minimesh.io/control-plane-ns=<control plane>. */
  pods: MeshedPodLike[];
  /** Each pod's proxy /metrics (key namespace/name), or why it could not be read. */
  metrics: Map<string, { text?: string; error?: string }>;
  /** The control plane's version(s) (app.kubernetes.io/version of its Deployments); empty when unknown. */
  controlPlaneVersions: string[];
  /** The control plane's trust anchors and issuer (undefined: not readable; the control-plane checks say why). */
  trustAnchorsPem: string | undefined;
  issuerCrtPem: string | undefined;
  now?: Date;
}

export const podKey = (p: MeshedPodLike): string => `${p.metadata?.namespace ?? '?'}/${p.metadata?.name ?? '?'}`;

function proxyContainer(p: MeshedPodLike): ContainerLike | undefined {
  return [...(p.spec?.initContainers ?? []), ...(p.spec?.containers ?? [])].find(
    (c) => c.name === CONTAINER_NAMES.proxy,
  );
}

function proxyStatus(p: MeshedPodLike): ContainerStatusLike | undefined {
  return [...(p.status?.initContainerStatuses ?? []), ...(p.status?.containerStatuses ?? [])].find(
    (c) => c.name === CONTAINER_NAMES.proxy,
  );
}

/** The value of the first sample of a metric in Prometheus text, if there is one. */
export function metricValue(text: string, name: string): number | undefined {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

function hours(ms: number): string {
  const h = ms / 3_600_000;
  return h >= 48 ? `${Math.floor(h / 24)} days` : `${h.toFixed(1)} hours`;
}

/** One line for a list of pods: the first few and how many more. */
function podList(items: string[]): string {
  return items.length <= 5 ? items.join('; ') : `${items.slice(0, 5).join('; ')}; and ${items.length - 5} more`;
}

export function checkProxies(input: ProxyCheckInput): CheckResult[] {
  const now = (input.now ?? new Date()).getTime();
  const where = input.namespace === undefined ? 'in any namespace' : `in namespace ${input.namespace}`;
  const pods = input.pods.filter((p) => p.metadata?.deletionTimestamp === undefined && proxyContainer(p));
  const results: CheckResult[] = [];
  if (pods.length === 0)
    return [
      {
        ...fail(
          DATA_PLANE_CATEGORY,
          'data-plane proxies exist',
          `no pod with a ${CONTAINER_NAMES.proxy} container ${where}`,
          'inject a workload: kubectl annotate namespace <ns> minimesh.io/inject=enabled, then restart its pods',
        ),
        retry: true,
      },
    ];
  results.push(ok(DATA_PLANE_CATEGORY, 'data-plane proxies exist', `${pods.length} meshed pod(s) ${where}`));

  // Ready: the kubelet's view (the proxy's /ready turns 200 once it holds a certificate).
  const notReady = pods.flatMap((p) => {
    const s = proxyStatus(p);
    if (s?.ready) return [];
    const why =
      s?.state?.waiting?.reason ??
      s?.state?.terminated?.reason ??
      (s ? 'not ready' : `pod ${p.status?.phase ?? 'pending'}`);
    return [`${podKey(p)}: ${why}${s?.restartCount ? ` (${s.restartCount} restarts)` : ''}`];
  });
  results.push(
    notReady.length > 0
      ? {
          ...fail(
            DATA_PLANE_CATEGORY,
            'data-plane proxies are ready',
            podList(notReady),
            `kubectl logs <pod> -c ${CONTAINER_NAMES.proxy}`,
          ),
          retry: true,
        }
      : ok(DATA_PLANE_CATEGORY, 'data-plane proxies are ready', `${pods.length}/${pods.length} ready`),
  );

  // The certificate each proxy holds: its expiry, from the proxy's own identity metric.
  const certProblems: string[] = [];
  let soonest: { pod: string; at: number } | undefined;
  for (const p of pods) {
    const m = input.metrics.get(podKey(p));
    if (!m || m.text === undefined) {
      certProblems.push(`${podKey(p)}: cannot read the proxy's metrics: ${m?.error ?? 'not asked'}`);
      continue;
    }
    const exp = metricValue(m.text, CERT_EXPIRY_METRIC);
    if (exp === undefined || !Number.isFinite(exp) || exp === 0) {
      certProblems.push(`${podKey(p)}: the proxy has no certificate yet (no ${CERT_EXPIRY_METRIC})`);
      continue;
    }
    const at = exp * 1000;
    if (at <= now) certProblems.push(`${podKey(p)}: its certificate expired at ${new Date(at).toISOString()}`);
    else if (!soonest || at < soonest.at) soonest = { pod: podKey(p), at };
  }
  results.push(
    certProblems.length > 0
      ? {
          ...fail(
            DATA_PLANE_CATEGORY,
            'data-plane proxies hold a valid certificate',
            podList(certProblems),
            `the identity service signs them: minimesh check; kubectl logs <pod> -c ${CONTAINER_NAMES.proxy}`,
          ),
          retry: true,
        }
      : ok(
          DATA_PLANE_CATEGORY,
          'data-plane proxies hold a valid certificate',
          soonest
            ? `the first to expire: ${soonest.pod} in ${hours(soonest.at - now)} (refreshed before then)`
            : undefined,
        ),
  );

  // The trust anchors each proxy was started with: the current issuer must chain to them (else the proxy's
  // certificate, which that issuer signs, does not verify for its peers), and they should be the control
  // plane's current bundle (Linkerd's "data plane proxies certificate match CA").
  const trustDesc = "data-plane proxies' certificates chain to their trust anchors";
  let issuer: X509Certificate | undefined;
  let cpAnchors: X509Certificate[] = [];
  if (input.issuerCrtPem !== undefined) issuer = parseAll(input.issuerCrtPem).certs[0];
  if (input.trustAnchorsPem !== undefined) cpAnchors = parseAll(input.trustAnchorsPem).certs;
  if (!issuer || cpAnchors.length === 0) {
    results.push(skip(DATA_PLANE_CATEGORY, trustDesc, "the control plane's issuer or trust anchors are not readable"));
  } else {
    const broken: string[] = [];
    const stale: string[] = [];
    const cpFingerprints = new Set(cpAnchors.map((a) => a.fingerprint256));
    for (const p of pods) {
      const pem = proxyContainer(p)?.env?.find((e) => e.name === PROXY_ENV.trustAnchors)?.value ?? '';
      const anchors = parseAll(pem).certs;
      if (anchors.length === 0) {
        broken.push(`${podKey(p)}: no trust anchors in ${PROXY_ENV.trustAnchors}`);
        continue;
      }
      const i = issuer;
      if (!anchors.some((a) => i.checkIssued(a) && i.verify(a.publicKey)))
        broken.push(`${podKey(p)}: issuer ${cn(i)} is signed by none of ${anchors.map(cn).join(', ')}`);
      if (anchors.length !== cpFingerprints.size || anchors.some((a) => !cpFingerprints.has(a.fingerprint256)))
        stale.push(podKey(p));
    }
    if (broken.length > 0)
      results.push(
        fail(
          DATA_PLANE_CATEGORY,
          trustDesc,
          podList(broken),
          'restart the pods so the injector gives them the current trust anchors (kubectl rollout restart); docs/certificates.md',
        ),
      );
    else results.push(ok(DATA_PLANE_CATEGORY, trustDesc, `issuer ${cn(issuer)}`));
    results.push(
      stale.length > 0
        ? warn(
            DATA_PLANE_CATEGORY,
            "data-plane proxies have the control plane's current trust anchors",
            `${podList(stale)}: started with another trust-anchor bundle`,
            'kubectl rollout restart the workloads once the new bundle is installed (docs/certificates.md)',
          )
        : ok(DATA_PLANE_CATEGORY, "data-plane proxies have the control plane's current trust anchors"),
    );
  }

  // Versions: the pod's minimesh.io/proxy-version against the control plane's (a warning, as Linkerd's).
  const versionDesc = "data-plane proxies run the control plane's version";
  if (input.controlPlaneVersions.length === 0) {
    results.push(skip(DATA_PLANE_CATEGORY, versionDesc, 'the control-plane version is unknown'));
  } else {
    const off = pods.flatMap((p) => {
      const v =
        p.metadata?.annotations?.[ANNOTATIONS.proxyVersion] ?? proxyContainer(p)?.image?.split(':').pop() ?? '?';
      return input.controlPlaneVersions.includes(v) ? [] : [`${podKey(p)}: ${v}`];
    });
    results.push(
      off.length > 0
        ? warn(
            DATA_PLANE_CATEGORY,
            versionDesc,
            `control plane ${input.controlPlaneVersions.join(', ')}; ${podList(off)}`,
            'kubectl rollout restart the workloads so the injector gives them the current proxy',
          )
        : ok(DATA_PLANE_CATEGORY, versionDesc, input.controlPlaneVersions.join(', ')),
    );
  }
  return results;
}

// --- The read (thin I/O) ---

/**
 * `--proxy`: every meshed pod of the control plane in `controlPlaneNamespace` (in one namespace or all),
 * its proxy's metrics, the certificates and versions. The control plane's own pods are meshed too;
 * they are checked with the rest.
 */
export async function proxyChecks(
  client: KubeClient,
  opts: { controlPlaneNamespace: string; dataPlaneNamespace?: string; readyTimeoutMs: number; now?: Date },
): Promise<CheckResult[]> {
  const cp = opts.controlPlaneNamespace;
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
    return [fail(DATA_PLANE_CATEGORY, 'data-plane pods are readable', describeKubeError(err))];
  }
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
            : { error: r.error ?? `/metrics answered HTTP ${r.status}: ${firstLine(r.body)}` },
        );
      }),
  );
  const { trustAnchorsPem, issuerCrtPem } = await readCertificates(client, cp);
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
    trustAnchorsPem,
    issuerCrtPem,
    ...(opts.now ? { now: opts.now } : {}),
  });
}
