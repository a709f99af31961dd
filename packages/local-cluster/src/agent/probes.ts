// Probes (startup, readiness, liveness) run from the node namespace against the pod IP, as the
// kubelet runs them from the node: httpGet and tcpSocket through the node namespace's dialer, exec
// inside the container's namespaces with nsenter. grpc probes are checked as TCP connects.
import { execFile } from 'node:child_process';
import { request, type IncomingMessage } from 'node:http';
import { connect as tlsConnect } from 'node:tls';
import type { KubeObject } from '../kube-client.js';
import { dialNode, probeNodeTcp } from '../forward.js';

export interface ProbeContext {
  podIp: string;
  /** All containers of the pod (for named ports). */
  containers: KubeObject[];
  /** The container's process id (exec probes). */
  pid?: number;
}

function resolvePort(port: number | string, ctx: ProbeContext): number {
  if (typeof port === 'number') return port;
  if (/^\d+$/.test(port)) return Number(port);
  for (const c of ctx.containers) for (const p of c.ports ?? []) if (p.name === port) return p.containerPort;
  throw new Error(`probe: named port ${port} not found`);
}

function httpProbe(get: KubeObject, ctx: ProbeContext, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    let port: number;
    try {
      port = resolvePort(get.port, ctx);
    } catch {
      return resolve(false);
    }
    const target = `${get.host ?? ctx.podIp}:${port}`;
    const https = String(get.scheme ?? 'HTTP').toUpperCase() === 'HTTPS';
    const headers: Record<string, string> = { 'user-agent': 'kube-probe/1.33', host: target };
    for (const h of get.httpHeaders ?? []) headers[h.name] = h.value;
    const opts = {
      method: 'GET',
      path: get.path ?? '/',
      headers,
      timeout: timeoutMs,
      createConnection: () => dialNode(target),
    };
    const done = (ok: boolean) => {
      clearTimeout(timer);
      resolve(ok);
    };
    const onRes = (res: IncomingMessage) => {
      res.resume();
      const code = res.statusCode ?? 0;
      done(code >= 200 && code < 400);
    };
    // HTTPS probes skip certificate verification, as the kubelet's do.
    const req = https
      ? request(
          { ...opts, createConnection: () => tlsConnect({ socket: dialNode(target), rejectUnauthorized: false }) },
          onRes,
        )
      : request(opts, onRes);
    const timer = setTimeout(() => {
      req.destroy();
      resolve(false);
    }, timeoutMs);
    req.on('error', () => done(false));
    req.end();
  });
}

function execProbe(cmd: string[], ctx: ProbeContext, timeoutMs: number): Promise<boolean> {
  if (!ctx.pid) return Promise.resolve(false);
  return new Promise((resolve) => {
    execFile('nsenter', ['-t', String(ctx.pid), '-m', '-n', '--', ...cmd], { timeout: timeoutMs }, (err) =>
      resolve(!err),
    );
  });
}

/** Runs one probe once. */
export async function runProbe(probe: KubeObject, ctx: ProbeContext): Promise<boolean> {
  const timeoutMs = (probe.timeoutSeconds ?? 1) * 1000;
  if (probe.httpGet) {
    return httpProbe(probe.httpGet, ctx, timeoutMs);
  }
  if (probe.tcpSocket) {
    try {
      return await probeNodeTcp(
        `${probe.tcpSocket.host ?? ctx.podIp}:${resolvePort(probe.tcpSocket.port, ctx)}`,
        timeoutMs,
      );
    } catch {
      return false;
    }
  }
  if (probe.grpc) return probeNodeTcp(`${ctx.podIp}:${probe.grpc.port}`, timeoutMs);
  if (probe.exec?.command) return execProbe(probe.exec.command, ctx, timeoutMs);
  return true;
}
