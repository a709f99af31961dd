// minimesh version: the client's version and, when a cluster is reachable, the control plane's (the
// app.kubernetes.io/version label the chart puts on each control-plane Deployment), as `linkerd version`.
import { MINIMESH_VERSION } from '@minimesh/config';
import { outputFlag, parseFlags, parseOutputFormat, renderData, UsageError } from '@minimesh/runtime';
import type { CommandIO } from '../io.js';
import { clusterFlags, connectKube, describeKubeError } from '../kube.js';

const info = {
  name: 'minimesh version',
  summary: "print the client's version and the control plane's",
  usage: 'minimesh version [--client] [-n minimesh] [--kubeconfig K] [--context C] [-o json|yaml]',
};

const flags = {
  client: { type: 'boolean', description: "print only the client's version (no cluster needed)" },
  namespace: { type: 'string', short: 'n', default: 'minimesh', description: 'the control-plane namespace' },
  ...clusterFlags,
  output: {
    ...outputFlag(['table', 'json', 'yaml']),
    description: 'output format: table (lines of text), json or yaml',
  },
} as const;

interface DeploymentList {
  items: Array<{ metadata?: { name?: string; labels?: Record<string, string> } }>;
}

/** The control plane's version(s): one per distinct app.kubernetes.io/version of its Deployments. */
export function serverVersions(list: DeploymentList): { version: string; deployments: string[] }[] {
  const byVersion = new Map<string, string[]>();
  for (const d of list.items) {
    const v = d.metadata?.labels?.['app.kubernetes.io/version'] ?? 'unknown';
    byVersion.set(v, [...(byVersion.get(v) ?? []), d.metadata?.name ?? '?']);
  }
  return [...byVersion].map(([version, deployments]) => ({ version, deployments: deployments.sort() }));
}

export async function versionCommand(argv: string[], io: CommandIO): Promise<number> {
  const parsed = parseFlags(info, flags, argv);
  if ('help' in parsed) {
    io.stdout.write(parsed.help);
    return 0;
  }
  if (parsed.positionals.length > 0)
    throw new UsageError(`${info.name}: unexpected argument ${JSON.stringify(parsed.positionals[0])}`);
  const f = parsed.values;
  const output = parseOutputFormat(info.name, f.output, ['table', 'json', 'yaml']);
  if (f.client) {
    io.stdout.write(
      output === 'table' ? `Client version: ${MINIMESH_VERSION}\n` : renderData(output, { client: MINIMESH_VERSION }),
    );
    return 0;
  }
  let server: { version: string; deployments: string[] }[] | undefined;
  let why: string | undefined;
  try {
    const { client } = await connectKube(f.kubeconfig || undefined, f.context || undefined);
    try {
      const selector = encodeURIComponent(`minimesh.io/control-plane-ns=${f.namespace}`);
      const list = await client.requestOk<DeploymentList>(
        'GET',
        `/apis/apps/v1/namespaces/${f.namespace}/deployments?labelSelector=${selector}`,
        undefined,
        { timeoutMs: 10_000 },
      );
      server = serverVersions(list);
      if (server.length === 0) why = `no control plane in namespace ${f.namespace}`;
    } finally {
      await client.close();
    }
  } catch (err) {
    why = describeKubeError(err);
  }
  if (output === 'json' || output === 'yaml') {
    const value = { client: MINIMESH_VERSION, server: server?.length ? server : null, ...(why ? { error: why } : {}) };
    io.stdout.write(output === 'json' ? `${JSON.stringify(value)}\n` : renderData('yaml', value));
    return 0;
  }
  const serverLine =
    server === undefined || server.length === 0
      ? 'unavailable'
      : server.length === 1
        ? (server[0] as { version: string }).version
        : server.map((s) => `${s.version} (${s.deployments.join(', ')})`).join(', ');
  io.stdout.write(`Client version: ${MINIMESH_VERSION}\nServer version: ${serverLine}\n`);
  if (why) io.stderr.write(`minimesh version: server version unavailable: ${why}\n`);
  return 0;
}
