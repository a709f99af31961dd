// The pure core of `minimesh explain`: nat text + pod + what the user asked → explanation.
import { describeExplanation, type Discovery, type Explanation, type ExplainTarget } from './describe.js';
import { parseIp } from '@minimesh/config';
import { parseNatTable } from '@minimesh/proxy-init';
import { walkPacket, type Packet } from './packet-walk.js';
import { toPodFacts, type PodFacts, type PodLike } from './pod-facts.js';

export interface ExplainRequest {
  /** `iptables-save -t nat` text of the pod's network namespace. */
  natText: string;
  pod: PodLike;
  /** Inbound: the pod port a client connects to. */
  port?: number;
  /** Outbound: HOST:PORT the app connects to (a name or an IP). */
  to?: { host: string; port: number; ip?: string };
  /** Override the sender's uid / gid (outbound). */
  uid?: number;
  gid?: number;
  /** Inbound: the client's address. */
  from?: string;
  container?: string;
  discovery?: Discovery;
}

export class ExplainInputError extends Error {
  readonly code = 'MINIMESH_CLI_EXPLAIN_INPUT';
}

/** "host:port", "[v6]:port" → parts; undefined when it is not that shape. */
export function parseHostPort(text: string): { host: string; port: number } | undefined {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(text) ?? /^([^:\s]+):(\d+)$/.exec(text);
  if (!m) return undefined;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return undefined;
  return { host: m[1] as string, port };
}

function isLoopback(host: string, facts: PodFacts): boolean {
  if (host === 'localhost' || host === facts.podIp) return true;
  const ip = parseIp(host);
  if (!ip) return false;
  return ip.family === 4 ? ip.value >> 24n === 127n : ip.value === 1n;
}

export function buildPacket(
  facts: PodFacts,
  req: Omit<ExplainRequest, 'natText' | 'pod'>,
): { packet: Packet; target: ExplainTarget; notes: string[] } {
  const notes: string[] = [];
  if (req.to) {
    const uid = req.uid ?? facts.appUid;
    if (uid === undefined)
      notes.push(
        `container ${facts.appContainer ?? '?'} sets no runAsUser: assumed uid 0 (root, the usual image default); pass --uid to change it`,
      );
    const ip = parseIp(req.to.host) ? req.to.host : req.to.ip;
    const packet: Packet = {
      direction: 'outbound',
      protocol: 'tcp',
      dport: req.to.port,
      uid: uid ?? 0,
      outInterface: isLoopback(ip ?? req.to.host, facts) ? 'lo' : 'eth0',
      ...(ip ? { destination: ip } : {}),
      ...(facts.podIp ? { source: facts.podIp } : {}),
      ...((req.gid ?? facts.appGid) !== undefined ? { gid: (req.gid ?? facts.appGid) as number } : {}),
    };
    return { packet, target: { host: req.to.host, port: req.to.port }, notes };
  }
  let port = req.port;
  if (port === undefined) {
    port = facts.appPorts[0]?.port;
    if (port === undefined)
      throw new ExplainInputError(
        'the pod declares no container port: pass --port P (inbound) or --to HOST:PORT (outbound)',
      );
    notes.push(`no --port given: using the first container port, ${port} (${facts.appPorts[0]?.container})`);
  }
  const packet: Packet = {
    direction: 'inbound',
    protocol: 'tcp',
    dport: port,
    inInterface: 'eth0',
    ...(facts.podIp ? { destination: facts.podIp } : {}),
    ...(req.from ? { source: req.from } : {}),
  };
  return { packet, target: { ...(facts.podIp ? { host: facts.podIp } : {}), port }, notes };
}

export function explainConnection(req: ExplainRequest): Explanation {
  const table = parseNatTable(req.natText);
  const facts = toPodFacts(req.pod, req.container !== undefined ? { container: req.container } : {});
  if (req.container !== undefined && facts.appContainer === undefined)
    throw new ExplainInputError(`the pod has no container named "${req.container}"`);
  const { packet, target, notes } = buildPacket(facts, req);
  const walk = walkPacket(table, packet);
  if (
    packet.direction === 'inbound' &&
    facts.appPorts.length > 0 &&
    !facts.appPorts.some((p) => p.port === packet.dport) &&
    ![facts.inboundPort, facts.outboundPort, facts.adminPort, facts.controlPort].includes(packet.dport)
  ) {
    notes.push(
      `no container declares port ${packet.dport} (declared: ${facts.appPorts.map((p) => p.port).join(', ')}): if nothing listens there, the connection is refused after this path`,
    );
  }
  for (const w of table.warnings) notes.push(`nat table: ${w}`);
  if (![...table.chains.values()].some((c) => c.name.startsWith('PROXY_INIT_')))
    notes.push('the nat table has no PROXY_INIT_* chains: proxy-init has not run in this pod (or ran with --cleanup)');
  return describeExplanation({
    facts,
    packet,
    walk,
    target,
    ...(req.discovery ? { discovery: req.discovery } : {}),
    notes,
  });
}
