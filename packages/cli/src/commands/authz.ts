// minimesh authz <namespace>/<workload>: for each port of the workload's pods, the Server (or default
// policy) that governs it, its routes and who each authorization admits — computed by the policy
// controller's own index from the objects in the cluster (src/policy-cluster.ts).
import type { KubeClient } from '@minimesh/kube';
import { authzReport, formatAuthzReport, parseLabelSelector, selectorMatches } from '@minimesh/policy';
import { outputFlag, parseFlags, parseOutputFormat, renderData, UsageError } from '@minimesh/runtime';
import type { CommandIO } from '../io.js';
import { clusterFlags, connectKube, describeKubeError, kubeStatus } from '../kube.js';
import { loadPolicyState } from '../policy-cluster.js';

const info = {
  name: 'minimesh authz',
  summary:
    "list, for each port of a workload's pods, the Server or default policy that governs it, its routes, and which clients each authorization admits",
  usage:
    'minimesh authz <namespace>/<workload> [--port P] [--namespace minimesh] [--kubeconfig K] [--context C] [-o json|yaml]',
};

const flags = {
  port: { type: 'string', description: 'also report this port (comma-separated list) besides the declared ones' },
  namespace: { type: 'string', default: 'minimesh', description: 'the control-plane namespace' },
  ...clusterFlags,
  output: {
    ...outputFlag(['table', 'json', 'yaml']),
    description: 'output format: table (the report as text), json or yaml',
  },
  json: { type: 'boolean', description: 'the same as -o json' },
} as const;

const WORKLOAD_KINDS = [
  ['deployments', 'apps/v1'],
  ['statefulsets', 'apps/v1'],
  ['daemonsets', 'apps/v1'],
] as const;

interface Selectable {
  spec?: { selector?: unknown };
}
interface PodItem {
  metadata?: { name?: string; labels?: Record<string, string>; deletionTimestamp?: string };
}

/** The pods of `name` in `namespace`: a Deployment/StatefulSet/DaemonSet's by its selector, else the pod itself. */
async function workloadPods(client: KubeClient, namespace: string, name: string): Promise<string[] | undefined> {
  const pods = await client.requestOk<{ items?: PodItem[] }>('GET', `/api/v1/namespaces/${namespace}/pods`);
  const live = (pods.items ?? []).filter((p) => p.metadata?.deletionTimestamp === undefined);
  for (const [plural, version] of WORKLOAD_KINDS) {
    let w: Selectable | undefined;
    try {
      w = await client.get<Selectable>(`/apis/${version}/namespaces/${namespace}/${plural}/${name}`);
    } catch (err) {
      if (kubeStatus(err) === 403) continue;
      throw err;
    }
    if (!w) continue;
    const selector = parseLabelSelector(w.spec?.selector, 'spec.selector');
    return live.filter((p) => selectorMatches(selector, p.metadata?.labels ?? {})).map((p) => p.metadata?.name ?? '');
  }
  if (live.some((p) => p.metadata?.name === name)) return [name];
  return undefined;
}

function parsePorts(value: string): number[] {
  if (value === '') return [];
  return value.split(',').map((v) => {
    const t = v.trim();
    if (!/^\d+$/.test(t) || Number(t) < 1 || Number(t) > 65535)
      throw new UsageError(`${info.name}: --port ${JSON.stringify(value)} is not valid: expected port numbers 1-65535`);
    return Number(t);
  });
}

export async function authzCommand(argv: string[], io: CommandIO): Promise<number> {
  const parsed = parseFlags(info, flags, argv);
  if ('help' in parsed) {
    io.stdout.write(parsed.help);
    return 0;
  }
  const f = parsed.values;
  if (parsed.positionals.length !== 1)
    throw new UsageError(
      `${info.name}: expected one <namespace>/<workload>, got ${parsed.positionals.length} arguments (see ${info.name} --help)`,
    );
  const ref = parsed.positionals[0] as string;
  const m = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-.a-z0-9]*[a-z0-9])?)$/.exec(ref);
  if (!m)
    throw new UsageError(
      `${info.name}: ${JSON.stringify(ref)} is not valid: expected <namespace>/<workload> (a Deployment, StatefulSet, DaemonSet or pod name)`,
    );
  const namespace = m[1] as string;
  const name = m[3] as string;
  const ports = parsePorts(f.port);
  const output = f.json ? 'json' : parseOutputFormat(info.name, f.output, ['table', 'json', 'yaml']);

  let client: KubeClient;
  try {
    ({ client } = await connectKube(f.kubeconfig || undefined, f.context || undefined));
  } catch (err) {
    io.stderr.write(`${info.name}: ${(err as Error).message}\n`);
    return 1;
  }
  try {
    let pods: string[] | undefined;
    try {
      pods = await workloadPods(client, namespace, name);
    } catch (err) {
      io.stderr.write(`${info.name}: cannot read ${namespace}/${name}: ${describeKubeError(err)}\n`);
      return 1;
    }
    if (pods === undefined) {
      io.stderr.write(`${info.name}: no Deployment, StatefulSet, DaemonSet or pod ${namespace}/${name}\n`);
      return 1;
    }
    const state = await loadPolicyState(client, { controlPlaneNamespace: f.namespace, namespace });
    const reports = authzReport(state.index, namespace, pods, ports);
    const invalid = state.invalid.filter((i) => i.includes(` ${namespace}/`));
    if (output === 'json' || output === 'yaml') {
      io.stdout.write(renderData(output, { reports, invalid, notes: state.notes }));
      return 0;
    }
    if (pods.length === 0) io.stdout.write(`${namespace}/${name}: no running pods\n`);
    else io.stdout.write(formatAuthzReport(reports, invalid));
    if (state.notes.length) io.stdout.write(`\nNotes:\n${state.notes.map((n) => `- ${n}`).join('\n')}\n`);
    return 0;
  } finally {
    await client.close();
  }
}
