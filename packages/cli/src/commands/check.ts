// minimesh check: what `linkerd check` does, briefly. The flags, the rounds of --wait and the order of
// the checks; each check (its read of the cluster and its pure verdict) lives in src/check/. Prints
// ✔/‼/✖ lines and exits 1 on any failure.
import { parseDuration } from '@minimesh/config';
import type { KubeClient } from '@minimesh/kube';
import { outputFlag, parseFlags, parseOutputFormat, renderData, sleep, UsageError } from '@minimesh/runtime';
import { checkCertificates, DEFAULT_WARN_DAYS, readCertificates } from '../check/certificates.js';
import {
  API_CATEGORY,
  checkApi,
  checkReadiness,
  deploymentChecks,
  namespaceCheck,
  probeReadiness,
  readApi,
  webhookChecks,
} from '../check/control-plane.js';
import { cniChecks } from '../check/cni.js';
import { policyChecks } from '../check/policy.js';
import { preChecks } from '../check/pre.js';
import { proxyChecks } from '../check/proxy.js';
import { exitCodeOf, formatResults, useColor, type CheckResult } from '../check/types.js';
import type { CommandIO } from '../io.js';
import { clusterFlags, connectKube } from '../kube.js';

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

/** The --proxy part alone (tests). */
export const proxyChecksOnly = (client: KubeClient, opts: CheckOptions): Promise<CheckResult[]> =>
  proxyChecks(client, {
    controlPlaneNamespace: opts.namespace,
    ...(opts.dataPlaneNamespace !== undefined ? { dataPlaneNamespace: opts.dataPlaneNamespace } : {}),
    readyTimeoutMs: opts.readyTimeoutMs,
    ...(opts.now ? { now: opts.now } : {}),
  });

/** One round of checks with a connected client: the mode's checks (tests call this with a fake API). */
export async function collectChecks(client: KubeClient, server: string, opts: CheckOptions): Promise<CheckResult[]> {
  if (opts.mode === 'pre') return preChecks(client, server, opts.namespace);
  const results = await controlPlaneChecks(client, server, opts);
  if (opts.mode !== 'proxy' || results.some((r) => r.category === API_CATEGORY && r.status === 'fail')) return results;
  return [...results, ...(await proxyChecksOnly(client, opts))];
}

/** The control plane: the API, the namespace, the Deployments, the webhook, the certificates, /ready, policy. */
async function controlPlaneChecks(client: KubeClient, server: string, opts: CheckOptions): Promise<CheckResult[]> {
  const api = await readApi(client, server);
  const results = checkApi(api);
  if (api.error !== undefined) return results;
  const ns = opts.namespace;
  const namespace = await namespaceCheck(client, ns);
  results.push(namespace.result);
  if (!namespace.exists) return results;
  results.push(...(await deploymentChecks(client, ns)));
  results.push(...(await webhookChecks(client, ns, opts.now)));
  results.push(
    ...checkCertificates({
      ...(await readCertificates(client, ns)),
      warnWithinDays: opts.warnDays,
      ...(opts.now ? { now: opts.now } : {}),
    }),
  );
  results.push(...checkReadiness(await probeReadiness(client, ns, opts.readyTimeoutMs)));
  results.push(...(await policyChecks(client, ns, opts.readyTimeoutMs, opts.policyResources ?? false)));
  results.push(...(await cniChecks(client, ns, opts.readyTimeoutMs)));
  return results;
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
  let waitMs: number;
  try {
    waitMs = parseDuration('--wait', f.wait);
  } catch (err) {
    throw new UsageError(
      `${info.name}: --wait ${JSON.stringify(f.wait)} is not valid: expected a duration such as 30s, 5m or 1m30s (0: no wait)`,
      { cause: err },
    );
  }
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
