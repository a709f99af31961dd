// Open-loop HTTP/1.1 load through a proxy's outbound listener at a steady rate, counting every request:
// the in-process fault tests (faults, issuer-rotation, endpoint-killed) share it.
import { Agent, request } from 'node:http';

export interface LoadFailure {
  /** The request's number (its path is /r<i>). */
  i: number;
  /** When it was sent (Date.now()). */
  sent: number;
  /** `HTTP <status> <x-minimesh-proxy-error>` or the client error. */
  why: string;
}

export interface SteadyLoadOptions {
  /** The outbound listener (127.0.0.1). */
  port: number;
  /** The Host header. */
  host: string;
  rps: number;
  ms: number;
  maxSockets?: number;
  /** Runs once, `at.ms` into the run (while requests keep going out). */
  at?: { ms: number; run: () => void };
  /** Each 200 answer's body. */
  onAnswer?: (body: string) => void;
}

/** Sends `rps` requests a second for `ms`, each with a 5 s timeout; returns how many were sent and which failed. */
export async function steadyLoad(opts: SteadyLoadOptions): Promise<{ sent: number; failed: LoadFailure[] }> {
  const agent = new Agent({ keepAlive: true, maxSockets: opts.maxSockets ?? 16 });
  const failed: LoadFailure[] = [];
  const pending: Promise<void>[] = [];
  const one = (i: number) =>
    new Promise<void>((resolve) => {
      const sent = Date.now();
      const req = request(
        { host: '127.0.0.1', port: opts.port, path: `/r${i}`, headers: { host: opts.host }, agent, timeout: 5000 },
        (res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => {
            if (res.statusCode !== 200)
              failed.push({
                i,
                sent,
                why: `HTTP ${res.statusCode} ${String(res.headers['x-minimesh-proxy-error'] ?? '')}`,
              });
            else opts.onAnswer?.(body);
            resolve();
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', (e) => {
        failed.push({ i, sent, why: e.message });
        resolve();
      });
      req.end();
    });
  const t0 = Date.now();
  let i = 0;
  let fired = false;
  while (Date.now() - t0 < opts.ms) {
    const due = Math.floor(((Date.now() - t0) * opts.rps) / 1000);
    while (i < due) pending.push(one(i++));
    if (opts.at && !fired && Date.now() - t0 >= opts.at.ms) {
      fired = true;
      opts.at.run();
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  await Promise.all(pending);
  agent.destroy();
  return { sent: i, failed };
}
