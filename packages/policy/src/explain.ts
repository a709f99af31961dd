// The policy part of `minimesh explain`: which Server (or default policy) a connection to a pod's port
// meets, which route a request takes, and which authorization admits it — or that none does. The
// decision is the proxy's own: the index's answer is encoded as the proxy receives it and run through
// the same compiled policy minimesh-proxy uses.
import {
  authorizeConnection,
  authorizeRequest,
  compileServerPolicy,
  requestView,
  type ClientInfo,
} from './client/index.js';
import { describeAuthorization, describeProtocol, describeRateLimit, describeServerRef } from './describe.js';
import type { PolicyIndex } from './index/policy-index.js';
import { toProtoServer } from './server/inbound-translator.js';

export interface ExplainClient {
  /** The client's address; undefined: unknown (explained for an in-cluster client, 10.0.0.1). */
  ip?: string;
  /** The client's mesh identity (it comes over mTLS); undefined: an unmeshed client (plaintext). */
  identity?: string;
}

export interface ExplainRequest {
  method: string;
  path: string;
  host?: string;
  headers?: Record<string, string>;
}

export type PolicyOutcome = 'admitted' | 'forbidden' | 'closed' | 'no-route' | 'invalid' | 'unknown-pod';

export interface PolicyExplanation {
  outcome: PolicyOutcome;
  lines: string[];
}

export function explainInboundPolicy(
  index: PolicyIndex,
  target: { namespace: string; pod: string; port: number },
  client: ExplainClient,
  request?: ExplainRequest,
): PolicyExplanation {
  const result = index.inbound('pod', target.namespace, target.pod, target.port);
  if (!result)
    return {
      outcome: 'unknown-pod',
      lines: [
        `The policy controller does not know pod ${target.namespace}/${target.pod}; its proxy keeps its configured default policy.`,
      ],
    };
  const server = result.server;
  const lines: string[] = [];
  const kind = server.ref.kind === 'default' ? 'no Server selects it, so' : 'it is selected by';
  lines.push(
    `Port ${target.port} of ${target.namespace}/${target.pod}: ${kind} ${describeServerRef(server)}; protocol ${describeProtocol(server.protocol)}.`,
  );
  for (const other of result.conflicting)
    lines.push(`Server ${other} also selects it and is ignored for it (the oldest Server wins).`);
  for (const i of result.ignored) lines.push(`${i.kind} ${i.namespace}/${i.name} has no effect: ${i.reason}.`);
  const info: ClientInfo = {
    ip: client.ip ?? '10.0.0.1',
    tls: client.identity !== undefined,
    identity: client.identity,
  };
  const who = `${client.identity ? `a meshed client ${client.identity} (mTLS)` : 'an unmeshed client (plaintext)'} from ${client.ip ?? 'an in-cluster address'}`;
  const compiled = compileServerPolicy(toProtoServer(server, index.cluster.networks));
  const httpLike = compiled.protocol !== 'opaque' && compiled.protocol !== 'tls';
  if (!request || !httpLike) {
    if (request && !httpLike)
      lines.push(
        `The port is ${compiled.protocol}: requests are not looked at, the connection is authorized as a whole.`,
      );
    const authz = authorizeConnection(compiled, info);
    if (authz) {
      lines.push(
        `A TCP connection from ${who} is admitted by ${authz.meta.kind === 'default' ? 'default' : 'AuthorizationPolicy'} ${authz.meta.name}.`,
      );
      return { outcome: 'admitted', lines };
    }
    lines.push(
      server.authorizations.length
        ? `A TCP connection from ${who} is admitted by none of: ${server.authorizations.map(describeAuthorization).join('; ')}.`
        : `Nothing is authorized on this port.`,
    );
    lines.push('The proxy closes the connection and counts it in inbound_tcp_authz_deny_total.');
    return { outcome: 'closed', lines };
  }
  const headers = Object.fromEntries(Object.entries(request.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  const d = authorizeRequest(
    compiled,
    info,
    requestView(request.method, request.path, request.host, (n) => headers[n]),
  );
  const req = `${request.method.toUpperCase()} ${request.path}`;
  if (d.kind === 'invalid') {
    lines.push(`The policy cannot be used (${d.reason}): the proxy answers 500.`);
    return { outcome: 'invalid', lines };
  }
  if (d.kind === 'no-route') {
    lines.push(
      `${req} matches no route of the Server: the proxy answers 404 and counts it in inbound_http_route_not_found_total.`,
    );
    return { outcome: 'no-route', lines };
  }
  const route =
    d.route.meta.kind === 'default'
      ? `default route ${d.route.meta.name}`
      : `${d.route.meta.kind} ${d.route.meta.name}`;
  if (d.kind === 'allow') {
    const authz =
      d.authz.meta.kind === 'default' ? `default ${d.authz.meta.name}` : `AuthorizationPolicy ${d.authz.meta.name}`;
    lines.push(
      `${req} takes ${route}; from ${who} it is admitted by ${authz} (counted in inbound_http_authz_allow_total).`,
    );
    if (server.rateLimit)
      lines.push(
        `Then the Server's rate limit applies: ${describeRateLimit(server.rateLimit)}; counted in inbound_http_local_ratelimit_total.`,
      );
    return { outcome: 'admitted', lines };
  }
  const routeModel = server.httpRoutes.find((r) =>
    r.ref.kind === 'default'
      ? r.ref.name === d.route.meta.name && d.route.meta.kind === 'default'
      : r.ref.name === d.route.meta.name,
  );
  const candidates = [...(routeModel?.authorizations ?? []), ...server.authorizations].map(describeAuthorization);
  lines.push(
    candidates.length
      ? `${req} takes ${route}; from ${who} it is admitted by none of: ${candidates.join('; ')}.`
      : `${req} takes ${route}; nothing is authorized on it.`,
  );
  lines.push(
    'The proxy answers 403 Forbidden (gRPC: PERMISSION_DENIED) and counts it in inbound_http_authz_deny_total.',
  );
  return { outcome: 'forbidden', lines };
}
