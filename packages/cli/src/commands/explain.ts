// minimesh explain <namespace>/<pod> [--port P | --to HOST:PORT]: walks one connection through the
// pod's live nat rules and the proxy's routing decision, and says in numbered lines which rule
// matched and where the bytes go. The reasoning is pure (src/explain/); this file only fetches.
import type { KubeClient } from '@minimesh/kube';
import { explainInboundPolicy, type ExplainRequest } from '@minimesh/policy';
import { parseFlags, UsageError } from '@minimesh/runtime';
import type { Discovery } from '../explain/describe.js';
import { explainConnection, ExplainInputError, parseHostPort } from '../explain/explain.js';
import {
  cniRecordNatSource,
  debugContainerNatSource,
  fileNatSource,
  kubeDebugContainerApi,
  kubectlDebugHint,
  type NatSource,
} from '../explain/nat-source.js';
import { CONTAINER_NAMES, MINIMESH_VERSION, parseIp } from '@minimesh/config';
import type { PodLike } from '../explain/pod-facts.js';
import type { CommandIO } from '../io.js';
import { clusterFlags, connectKube, describeKubeError, kubeStatus } from '../kube.js';
import { loadPolicyState, type PolicyState } from '../policy-cluster.js';

const info = {
  name: 'minimesh explain',
  summary:
    "walk a TCP connection through a pod's live nat rules (PREROUTING/OUTPUT and proxy-init's PROXY_INIT_* chains) and the proxy's routing decision, and say in words which rule matched and where the bytes go",
  usage: 'minimesh explain <namespace>/<pod> [--port P | --to HOST:PORT] [flags]',
};

const flags = {
  port: {
    type: 'string',
    description: 'inbound: the pod port a client connects to (default: the first container port)',
  },
  to: { type: 'string', description: 'outbound: HOST:PORT the app connects to (a service name or an IP)' },
  uid: {
    type: 'string',
    description: "outbound: the sending process's uid (default: the app container's runAsUser, else 0)",
  },
  gid: { type: 'string', description: "outbound: the sending process's gid" },
  from: { type: 'string', description: "inbound: the client's IP address" },
  identity: {
    type: 'string',
    description: "inbound: the client's mesh identity (omit: an unmeshed client), for the authorization policy",
  },
  request: {
    type: 'string',
    description: 'inbound: an HTTP request to check against the routes and authorizations, e.g. "GET /orders"',
  },
  'control-plane-namespace': {
    type: 'string',
    default: 'minimesh',
    description: "the control plane's namespace (where the policy controller's settings are read)",
  },
  container: { type: 'string', description: 'the app container (default: the first non-proxy container)' },
  ...clusterFlags,
  'nat-file': {
    type: 'string',
    description: 'read the nat table from this file (iptables-save -t nat output) instead of the live pod',
  },
  'destination-addr': {
    type: 'string',
    description:
      "destination's gRPC address (e.g. a port-forward to 8086) to ask which endpoints and identities the proxy would use",
  },
  json: { type: 'boolean', description: 'print the explanation as JSON' },
} as const;

function intFlag(name: string, value: string, lo: number, hi: number): number | undefined {
  if (value === '') return undefined;
  if (!/^\d+$/.test(value) || Number(value) < lo || Number(value) > hi) {
    throw new UsageError(
      `${info.name}: --${name} ${JSON.stringify(value)} is not valid: expected a number from ${lo} to ${hi}`,
    );
  }
  return Number(value);
}

export async function explainCommand(argv: string[], io: CommandIO): Promise<number> {
  const parsed = parseFlags(info, flags, argv);
  if ('help' in parsed) {
    io.stdout.write(parsed.help);
    return 0;
  }
  const f = parsed.values;
  if (parsed.positionals.length !== 1)
    throw new UsageError(
      `${info.name}: expected one <namespace>/<pod>, got ${parsed.positionals.length} arguments (see ${info.name} --help)`,
    );
  const ref = parsed.positionals[0] as string;
  const m = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-.a-z0-9]*[a-z0-9])?)$/.exec(ref);
  if (!m) throw new UsageError(`${info.name}: ${JSON.stringify(ref)} is not valid: expected <namespace>/<pod>`);
  const namespace = m[1] as string;
  const podName = m[3] as string;
  const port = intFlag('port', f.port, 1, 65535);
  const uid = intFlag('uid', f.uid, 0, 4294967295);
  const gid = intFlag('gid', f.gid, 0, 4294967295);
  let to: { host: string; port: number; ip?: string } | undefined;
  if (f.to !== '') {
    to = parseHostPort(f.to);
    if (!to)
      throw new UsageError(
        `${info.name}: --to ${JSON.stringify(f.to)} is not valid: expected HOST:PORT, e.g. web.shop.svc.cluster.local:80 or 10.247.0.10:80`,
      );
    if (port !== undefined)
      throw new UsageError(`${info.name}: --port (inbound) and --to (outbound) exclude each other`);
  }
  if (f.from !== '' && !parseIp(f.from))
    throw new UsageError(`${info.name}: --from ${JSON.stringify(f.from)} is not valid: expected an IP address`);
  if (f['destination-addr'] !== '' && !parseHostPort(f['destination-addr'])) {
    throw new UsageError(
      `${info.name}: --destination-addr ${JSON.stringify(f['destination-addr'])} is not valid: expected HOST:PORT`,
    );
  }

  let request: ExplainRequest | undefined;
  if (f.request !== '') {
    const r = /^([A-Za-z]+)\s+(\/\S*)$/.exec(f.request.trim());
    if (!r)
      throw new UsageError(
        `${info.name}: --request ${JSON.stringify(f.request)} is not valid: expected "METHOD /path", e.g. "GET /orders"`,
      );
    request = { method: (r[1] as string).toUpperCase(), path: r[2] as string };
  }
  if ((f.identity !== '' || request) && to)
    throw new UsageError(`${info.name}: --identity and --request are for inbound connections (--port), not --to`);

  const notes: string[] = [];
  let policyState: PolicyState | undefined;
  let kube: KubeClient | undefined;
  // The pod: from the API, unless we are offline (--nat-file) and the API is not there.
  let pod: PodLike | undefined;
  let source: NatSource | undefined = f['nat-file'] !== '' ? fileNatSource(f['nat-file']) : undefined;
  let debugHint: (() => string) | undefined;
  try {
    const { client: api, server } = await connectKube(f.kubeconfig || undefined, f.context || undefined);
    kube = api;
    try {
      pod = await api.requestOk<PodLike>('GET', `/api/v1/namespaces/${namespace}/pods/${podName}`);
    } catch (err) {
      if (kubeStatus(err) === 404 && !source) {
        io.stderr.write(`${info.name}: pod ${namespace}/${podName} not found\n`);
        await api.close();
        return 1;
      }
      throw err;
    }
    if (to && !parseIp(to.host)) {
      const svc = /^([a-z0-9-]+)\.([a-z0-9-]+)(\.svc(\..+)?)?$/.exec(to.host);
      if (svc) {
        try {
          const s = await api.requestOk<{ spec?: { clusterIP?: string } }>(
            'GET',
            `/api/v1/namespaces/${svc[2] as string}/services/${svc[1] as string}`,
          );
          const ip = s.spec?.clusterIP;
          if (ip && ip !== 'None') {
            to.ip = ip;
            notes.push(`${to.host} is Service ${svc[2]}/${svc[1]}, ClusterIP ${ip}`);
          } else if (ip === 'None') {
            notes.push(`${to.host} is headless Service ${svc[2]}/${svc[1]}: the app connects to a pod IP`);
          }
        } catch (err) {
          // "name.ns" may as well be an outside name (example.com): only a .svc name must be a Service.
          if (svc[3] !== undefined)
            notes.push(`${to.host}: no Service ${svc[2]}/${svc[1]} (${describeKubeError(err)})`);
        }
      }
    }
    if (!to) {
      try {
        policyState = await loadPolicyState(api, {
          controlPlaneNamespace: f['control-plane-namespace'],
          namespace,
        });
      } catch (err) {
        notes.push(`the authorization policy is not explained: ${describeKubeError(err)}`);
      }
    }
    const inits = (pod.spec?.initContainers ?? []).map((c) => c.name);
    if (!source && inits.includes(CONTAINER_NAMES.validator) && !inits.includes(CONTAINER_NAMES.init)) {
      // CNI mode: minimesh-cni wrote the rules; its installer on the pod's node has what it wrote.
      source = cniRecordNatSource(api, {
        controlPlaneNamespace: f['control-plane-namespace'],
        node: pod.spec?.nodeName,
        uid: pod.metadata?.uid,
      });
    }
    if (!source) {
      // The live rules, read the way a user can on any cluster: an ephemeral debug container.
      source = debugContainerNatSource(kubeDebugContainerApi(api), {
        fallbackImage: `ghcr.io/minimesh/proxy-init:${MINIMESH_VERSION}`,
      });
      debugHint = () =>
        `${info.name}: reading the live rules needs permission to add ephemeral containers to pods (pods/ephemeralcontainers) and read their logs on ${server}. Or save the table with a netadmin debug container and pass it with --nat-file:\n` +
        `  ${kubectlDebugHint(namespace, podName, 'minimesh-proxy')}\n` +
        `  minimesh explain ${namespace}/${podName} --nat-file ${podName}.nat ${to ? `--to ${f.to}` : port !== undefined ? `--port ${port}` : ''}\n`;
    }
  } catch (err) {
    if (!source) {
      io.stderr.write(`${info.name}: cannot read pod ${namespace}/${podName}: ${describeKubeError(err)}\n`);
      await kube?.close();
      return 1;
    }
    notes.push(
      `pod ${namespace}/${podName} not read (${describeKubeError(err)}): assuming a meshed pod with the default proxy settings (uid 2102, ports 4143/4140)`,
    );
  }
  pod ??= offlinePod(namespace, podName);

  let natText: string;
  try {
    const addr = to ? (parseIp(to.host) ? to.host : to.ip) : pod.status?.podIP;
    natText = await source.read(namespace, podName, addr !== undefined && parseIp(addr)?.family === 6 ? 6 : 4);
  } catch (err) {
    io.stderr.write(`${info.name}: ${(err as Error).message}\n`);
    if (debugHint) io.stderr.write(debugHint());
    return 1;
  } finally {
    await kube?.close();
  }

  let discovery: Discovery | undefined;
  if (to && f['destination-addr'] !== '') {
    const { discover } = await import('../explain/discover.js');
    const contextToken = JSON.stringify({ ns: namespace, nodeName: '', pod: podName });
    try {
      discovery = await discover({ addr: f['destination-addr'], host: to.host, port: to.port, contextToken });
    } catch (err) {
      discovery = {
        via: parseIp(to.host) ? 'profile' : 'authority',
        exists: false,
        endpoints: [],
        error: (err as Error).message,
      };
    }
  }

  let explanation;
  try {
    explanation = explainConnection({
      natText,
      pod,
      ...(port !== undefined ? { port } : {}),
      ...(to ? { to } : {}),
      ...(uid !== undefined ? { uid } : {}),
      ...(gid !== undefined ? { gid } : {}),
      ...(f.from !== '' ? { from: f.from } : {}),
      ...(f.container !== '' ? { container: f.container } : {}),
      ...(discovery ? { discovery } : {}),
    });
  } catch (err) {
    if (err instanceof ExplainInputError) throw new UsageError(`${info.name}: ${err.message}`, { cause: err });
    throw err;
  }
  explanation.notes.unshift(...notes);
  // The proxy's authorization decision for this port (the policy controller's answer, run as the proxy runs it).
  const policy =
    policyState && explanation.direction === 'inbound'
      ? explainInboundPolicy(
          policyState.index,
          { namespace, pod: podName, port: explanation.packet.dport },
          {
            ...(f.from !== '' ? { ip: f.from } : {}),
            ...(f.identity !== '' ? { identity: f.identity } : {}),
          },
          request,
        )
      : undefined;
  if (policyState) explanation.notes.push(...policyState.notes);
  if (f.json) {
    io.stdout.write(`${JSON.stringify({ ...explanation, policy, natSource: source.describe }, null, 2)}\n`);
    return 0;
  }
  io.stdout.write(
    `${explanation.pod}: ${explanation.summary}\n(nat rules from ${source.describe})\n\n${explanation.lines.join('\n')}\n`,
  );
  if (policy)
    io.stdout.write(
      `\nAuthorization (${policy.outcome}):\n${policy.lines.map((l, i) => `${i + 1}. ${l}`).join('\n')}\n`,
    );
  if (explanation.notes.length > 0) io.stdout.write(`\nNotes:\n${explanation.notes.map((n) => `- ${n}`).join('\n')}\n`);
  return 0;
}

/** What we assume about a pod we could not read: meshed with the injector's defaults. */
function offlinePod(namespace: string, name: string): PodLike {
  return {
    metadata: { name, namespace },
    spec: {
      containers: [{ name: 'app' }],
      initContainers: [{ name: 'minimesh-proxy', securityContext: { runAsUser: 2102 } }],
    },
  };
}
