// Turns a walk, the pod's facts and (optionally) destination's answer into numbered plain-English
// lines: which rule matched, and where the bytes go after it — the proxy's part included. Pure.
import type { PortRange } from '@minimesh/config';
import type { Packet, Walk, WalkStep } from './packet-walk.js';
import type { PodFacts } from './pod-facts.js';

export interface DiscoveredEndpoint {
  addr: string;
  identity?: string;
  protocolHint?: string;
}

/** What destination said about the target (discover.ts fills it in when --destination-addr is given). */
export interface Discovery {
  /** The name:port asked for with Get. */
  authority?: string;
  /** How it was found: Get by name, or GetProfile by IP then Get by the profile's name. */
  via: 'authority' | 'profile';
  exists: boolean;
  endpoints: DiscoveredEndpoint[];
  /** GetProfile's endpoint (a pod IP target) or opaque protocol flag. */
  opaqueProtocol?: boolean;
  error?: string;
}

export interface ExplainTarget {
  /** --to as given (name or IP) and the port; inbound: the pod IP and --port. */
  host?: string;
  port: number;
}

export type Outcome =
  | 'redirected-to-proxy-inbound'
  | 'redirected-to-proxy-outbound'
  | 'redirected-elsewhere'
  | 'not-redirected'
  | 'dnat'
  | 'undecided';

export interface Explanation {
  pod: string;
  direction: 'inbound' | 'outbound';
  packet: Packet;
  outcome: Outcome;
  /** One line: where the bytes go. */
  summary: string;
  lines: string[];
  steps: WalkStep[];
  discovery?: Discovery;
  uncertain: boolean;
  notes: string[];
}

function inRanges(ranges: readonly PortRange[], port: number): boolean {
  return ranges.some((r) => port >= r.lo && port <= r.hi);
}

function lowerFirst(s: string): string {
  return s.startsWith('The ') ? `the ${s.slice(4)}` : s;
}

function ruleName(step: WalkStep): string {
  return `${step.chain} rule ${step.index}${step.comment ? ` (${step.comment})` : ''}`;
}

function stepLine(step: WalkStep, walk: Walk, facts: PodFacts): string {
  const name = ruleName(step);
  if (step.result === 'unknown') {
    return `Cannot tell whether ${name} matches: ${step.reasons.join('; ')}. Treated as not matching.`;
  }
  if (step.result === 'no') {
    const why = step.reasons[0] ?? 'it does not match';
    return `${capital(why.replace(/^uid (\d+) is not uid (\d+)$/, (_m, a: string, b: string) => (facts.proxyUid !== undefined && Number(b) === facts.proxyUid ? `uid ${a} is not the proxy's uid ${b}` : `uid ${a} is not uid ${b}`)))}: ${name} does not match.`;
  }
  const why = step.reasons.join(', ');
  if (step.action.startsWith('jumps to')) return `${name} ${step.action} (${why}).`;
  if (step.action === 'returns')
    return `${capital(why)}: ${name} matches and returns — the connection leaves the proxy-init chains and continues in ${walk.hook} without being redirected.`;
  return `${capital(why)}: ${name} matches and ${step.action}.`;
}

function capital(s: string): string {
  // Lower-case names (uid, gid, lo) stay as they are.
  if (/^(uid|gid|lo)\b/.test(s)) return s;
  return s.length === 0 ? s : s[0]!.toUpperCase() + s.slice(1);
}

function describeDiscovery(d: Discovery, fallback: string): string[] {
  if (d.error !== undefined)
    return [`Destination could not be asked (${d.error}); the proxy would use whatever destination tells it.`];
  if (!d.exists || d.endpoints.length === 0) {
    return [
      `Destination knows no endpoints for ${d.authority ?? 'it'}${d.exists ? '' : ' (not a known service)'}: the proxy forwards to ${fallback} in plaintext, without mTLS.`,
    ];
  }
  const meshed = d.endpoints.filter((e) => e.identity !== undefined);
  const ids = [...new Set(meshed.map((e) => e.identity))];
  const count = `${d.endpoints.length} endpoint${d.endpoints.length === 1 ? '' : 's'}`;
  const addrs = d.endpoints.map((e) => e.addr).join(', ');
  let meshedText: string;
  if (meshed.length === d.endpoints.length) {
    meshedText = `${d.endpoints.length === 1 ? 'meshed' : d.endpoints.length === 2 ? 'both meshed' : 'all meshed'} (identity ${ids.join(', ')}) → mTLS`;
  } else if (meshed.length === 0) {
    meshedText = 'none meshed → plaintext';
  } else {
    meshedText = `${meshed.length} meshed (identity ${ids.join(', ')}) → mTLS to those, plaintext to the other ${d.endpoints.length - meshed.length}`;
  }
  return [
    `Destination answers for ${d.authority ?? 'it'}: ${count} (${addrs}), ${meshedText}. The proxy picks one per request (HTTP) or connection (TCP) by power of two choices over peak-EWMA latency.`,
  ];
}

function proxyOutboundLines(
  facts: PodFacts,
  packet: Packet,
  target: ExplainTarget,
  discovery: Discovery | undefined,
): string[] {
  const original = `${target.host ?? packet.destination ?? '?'}:${target.port}`;
  const lines: string[] = [];
  const name = target.host !== undefined && !/^[\d.]+$|:/.test(target.host) ? target.host : undefined;
  const opaque = inRanges(facts.opaquePorts, target.port) || discovery?.opaqueProtocol === true;
  let first = `The proxy's outbound listener 127.0.0.1:${facts.outboundPort} gets the connection; it reads the original destination ${packet.destination ?? original}:${target.port} with SO_ORIGINAL_DST`;
  if (packet.destination === undefined)
    first = `The proxy's outbound listener 127.0.0.1:${facts.outboundPort} gets the connection; it reads the original destination (the address ${target.host ?? 'the name'} resolves to, port ${target.port}) with SO_ORIGINAL_DST`;
  if (opaque) {
    first += `; port ${target.port} is opaque, so there is no protocol detection: it is proxied as TCP and discovered by that address`;
  } else {
    first += ', detects the protocol from the first bytes (HTTP/2 preface, an HTTP/1 request line, else opaque TCP)';
    if (name !== undefined && /\.svc\.[^.]+(\.[^.]+)*$/.test(name)) {
      first += `, and for HTTP resolves ${name}:${target.port} (the Host header) through destination; raw TCP is discovered by the original destination address`;
    } else {
      first +=
        ', and resolves the target through destination (HTTP by its Host header when it is a cluster service name, otherwise by the original destination address)';
    }
  }
  lines.push(`${first}.`);
  if (discovery) lines.push(...describeDiscovery(discovery, original));
  else
    lines.push(
      `(Pass --destination-addr HOST:PORT to ask destination which endpoints and identities the proxy would use; without an answer the proxy sends to ${original} in plaintext.)`,
    );
  return lines;
}

function proxyInboundLines(facts: PodFacts, packet: Packet): string[] {
  const id = facts.identity !== undefined ? ` (${facts.identity})` : '';
  const port = packet.dport;
  if (
    port === facts.inboundPort ||
    port === facts.outboundPort ||
    port === facts.adminPort ||
    port === facts.controlPort
  ) {
    return [
      `The proxy refuses it: the original destination port ${port} is one of its own ports, and a connection to itself would loop (MINIMESH_PROXY_LOOP).`,
    ];
  }
  const opaque = inRanges(facts.opaquePorts, port);
  return [
    `The proxy's inbound listener 0.0.0.0:${facts.inboundPort} gets the connection; it reads the original destination ${packet.destination ? `${packet.destination}:${port}` : `(the pod IP, port ${port})`} with SO_ORIGINAL_DST and peeks at the first bytes: a TLS ClientHello whose SNI is this pod's identity${id} → it terminates mTLS and learns the client's identity; other TLS → passed through untouched; plaintext → ${opaque ? `no detection (port ${port} is opaque)` : 'protocol detection (HTTP/1, HTTP/2, else TCP)'}.`,
    `Then it connects to the app at 127.0.0.1:${port}; that connection is the proxy's own (uid ${facts.proxyUid ?? 'of the proxy'}) over lo, so OUTPUT leaves it alone.`,
  ];
}

/** The whole explanation: walk lines, verdict, the proxy's part. */
export function describeExplanation(input: {
  facts: PodFacts;
  packet: Packet;
  walk: Walk;
  target: ExplainTarget;
  discovery?: Discovery;
  notes?: string[];
}): Explanation {
  const { facts, packet, walk, target, discovery } = input;
  const lines: string[] = [];
  const notes = [...(input.notes ?? [])];
  const sender =
    facts.proxyUid !== undefined && packet.uid === facts.proxyUid
      ? 'the proxy'
      : facts.appContainer
        ? `container ${facts.appContainer}`
        : 'the pod';
  const who =
    packet.direction === 'outbound'
      ? `from ${sender} (uid ${packet.uid ?? 'unknown'})`
      : `from ${packet.source ?? 'another pod'}`;
  const where =
    packet.direction === 'outbound'
      ? `to ${target.host ?? packet.destination}:${target.port} over ${packet.outInterface ?? 'eth0'}`
      : packet.destination
        ? `to ${packet.destination}:${packet.dport}`
        : `to the pod's port ${packet.dport}`;
  lines.push(`A new ${packet.direction} TCP connection ${who} ${where} enters the nat table at ${walk.hook}.`);
  for (const step of walk.steps) lines.push(stepLine(step, walk, facts));
  let outcome: Outcome;
  let summary: string;
  const v = walk.verdict;
  switch (v.kind) {
    case 'redirect': {
      if (packet.direction === 'outbound' && v.port === facts.outboundPort) {
        outcome = 'redirected-to-proxy-outbound';
        summary = `redirected to the proxy's outbound listener 127.0.0.1:${v.port}`;
        lines.push(
          `REDIRECT to 127.0.0.1:${v.port}: ${lowerFirst(proxyOutboundLines(facts, packet, target, discovery).join(' '))}`,
        );
      } else if (packet.direction === 'inbound' && v.port === facts.inboundPort) {
        outcome = 'redirected-to-proxy-inbound';
        summary = `redirected to the proxy's inbound listener on port ${v.port}`;
        lines.push(
          `REDIRECT to port ${v.port} on the pod's own address: ${lowerFirst(proxyInboundLines(facts, packet).join(' '))}`,
        );
      } else {
        outcome = 'redirected-elsewhere';
        summary = `redirected to port ${v.port}, which is not a proxy listener`;
        lines.push(
          `REDIRECT to port ${v.port}: that is not one of the proxy's listeners (${facts.inboundPort} inbound, ${facts.outboundPort} outbound), so whatever listens on ${v.port} in the pod gets it.`,
        );
      }
      break;
    }
    case 'accept': {
      outcome = 'not-redirected';
      const dest =
        packet.direction === 'outbound'
          ? `${target.host ?? packet.destination}:${target.port}`
          : `port ${packet.dport}`;
      if (packet.direction === 'outbound') {
        const own = facts.proxyUid !== undefined && packet.uid === facts.proxyUid;
        summary = `not redirected: goes straight to ${dest}`;
        lines.push(
          `No rule redirects it: the connection goes straight to ${dest}${packet.outInterface ? ` over ${packet.outInterface}` : ''}, as the ${own ? 'proxy' : 'app'} sent it${own ? ' (this is how the proxy itself reaches endpoints without looping back into itself)' : ', not through the proxy: no mTLS, no metrics'}.`,
        );
      } else {
        summary = `not redirected: goes straight to ${dest}`;
        const admin =
          packet.dport === facts.adminPort
            ? ` — the proxy's admin server (/live, /ready, /metrics) answers there itself`
            : packet.dport === facts.controlPort
              ? ' — the proxy control port'
              : ', not through the proxy';
        lines.push(`No rule redirects it: whatever listens on ${dest} in the pod gets it directly${admin}.`);
      }
      break;
    }
    case 'dnat':
      outcome = 'dnat';
      summary = `destination rewritten to ${v.to}`;
      lines.push(`DNAT: the destination is rewritten to ${v.to}; the proxy-init rules do not see it.`);
      break;
    case 'other':
      outcome = 'undecided';
      summary = `target ${v.target} is not modelled`;
      lines.push(`${ruleName(v.step)} sends it to ${v.target}, which explain does not model; it stops here.`);
      break;
    case 'loop':
      outcome = 'undecided';
      summary = `the rules loop (at ${v.chain})`;
      lines.push(
        `The rules jump in a loop at ${v.chain}; iptables would refuse such a table, so this is not a saved table.`,
      );
      break;
  }
  if (!facts.meshed) notes.push('the pod has no minimesh-proxy container: it is not meshed');
  if (
    (outcome === 'redirected-to-proxy-inbound' || outcome === 'redirected-to-proxy-outbound') &&
    facts.proxyStatus &&
    !facts.proxyStatus.ready
  ) {
    const p = facts.proxyStatus;
    const what = `container minimesh-proxy ${p.state}${p.restarts > 0 ? `, ${p.restarts} restarts` : ''}`;
    const consequence =
      p.state === 'running'
        ? 'it listens, but until identity gives it a certificate it can neither originate nor terminate mTLS: connections to meshed endpoints fail with MINIMESH_PROXY_NOT_READY (HTTP 503), plaintext still passes'
        : 'nothing listens on its ports now, so this connection is refused';
    lines.push(
      `But the proxy is not ready (${what}): ${consequence}. See: kubectl logs -n ${facts.namespace} ${facts.name} -c minimesh-proxy`,
    );
  }
  if (walk.uncertain)
    notes.push('some rules could not be judged with what is known about the connection (see "Cannot tell" lines)');
  const numbered = lines.map((l, i) => `${i + 1}. ${l}`);
  return {
    pod: `${facts.namespace}/${facts.name}`,
    direction: packet.direction,
    packet,
    outcome,
    summary,
    lines: numbered,
    steps: walk.steps,
    ...(discovery ? { discovery } : {}),
    uncertain: walk.uncertain,
    notes,
  };
}
