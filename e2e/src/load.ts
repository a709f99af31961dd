// Steady load through the mesh for the fault specs: a meshed Deployment `load` (e2e/scripts/load.mjs in
// the http-client fixture image, mounted from a ConfigMap) and a collector that follows every load
// pod's log (`kubectl logs -f`, followed again when a stream is cut) and answers "how many requests
// were sent and how many failed between two instants", summed over the pods (a rollout replaces the
// load pod; the old one prints its last counts when it gets SIGTERM).
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Driver } from '../drivers/types.js';
import type { K8sObject } from './chart.js';
import { kubectlPath, repoRoot } from './tools.js';

export const LOAD_SCRIPT = join(repoRoot, 'e2e', 'scripts', 'load.mjs');

/** One second of a load pod: cumulative counts at `t` (epoch ms). */
export interface LoadTick {
  t: number;
  sent: number;
  ok: number;
  failed: number;
  inflight: number;
  maxMs: number;
  final?: boolean;
}

/** One failed request: when it was sent and when it failed (epoch ms), and how. */
export interface LoadFailure {
  n: number;
  sent: number;
  at: number;
  error?: string;
  status?: number;
  /** The proxy's x-minimesh-proxy-error header on an error response. */
  proxyError?: string;
  pod?: string;
}

/** The ConfigMap with the script and the Deployment that runs it (service account `sa`). */
export function loadObjects(opts: {
  driver: Driver;
  ns: string;
  url: string;
  rps: number;
  sa: string;
  name?: string;
}): K8sObject[] {
  const name = opts.name ?? 'load';
  const container: Record<string, unknown> = {
    name: 'load',
    image: opts.driver.fixtureImage('http-client'),
    command: ['node', '/load/load.mjs'],
    args: [opts.url, '--rps', String(opts.rps), '--timeout-ms', '10000'],
    volumeMounts: [{ name: 'script', mountPath: '/load' }],
    // As much CPU weight as its proxy's (the chart's 100m): without a request the container's cgroup
    // weighs 2 against the proxy's 102, and on a busy node the script waited behind its own proxy.
    resources: { requests: { cpu: '100m' } },
  };
  if (opts.driver.imagePullPolicy) container.imagePullPolicy = opts.driver.imagePullPolicy;
  return [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `${name}-script`, namespace: opts.ns },
      data: { 'load.mjs': readFileSync(LOAD_SCRIPT, 'utf8') },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace: opts.ns, labels: { app: name } },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: name } },
        template: {
          metadata: { labels: { app: name } },
          spec: {
            serviceAccountName: opts.sa,
            // The script waits up to its request timeout (10 s) for the requests in flight on SIGTERM.
            terminationGracePeriodSeconds: 20,
            containers: [container],
            volumes: [{ name: 'script', configMap: { name: `${name}-script` } }],
          },
        },
      },
    },
  ];
}

class PodLog {
  text = '';
  done = false;
  child: ChildProcess | undefined;
  /** What is parsed so far (up to `upTo` in `text`): each window reads it, so parse each line once. */
  private readonly ticks: LoadTick[] = [];
  private readonly failures: LoadFailure[] = [];
  private upTo = 0;
  constructor(readonly pod: string) {}

  parsed(): { ticks: LoadTick[]; failures: LoadFailure[] } {
    // `text` only grows (a follow again starts from the log's beginning and replaces it once longer).
    const end = this.text.lastIndexOf('\n') + 1;
    if (end > this.upTo) {
      for (const line of this.text.slice(this.upTo, end).split('\n')) {
        if (!line.startsWith('{')) continue;
        let v: Record<string, unknown>;
        try {
          v = JSON.parse(line) as Record<string, unknown>;
        } catch {
          continue; // not a line of the script's
        }
        if (v.fail) this.failures.push({ ...(v.fail as LoadFailure), pod: this.pod });
        else if (typeof v.t === 'number' && typeof v.sent === 'number') this.ticks.push(v as unknown as LoadTick);
      }
      this.upTo = end;
    }
    return { ticks: this.ticks, failures: this.failures };
  }
}

export interface LoadWindow {
  sent: number;
  ok: number;
  failed: number;
  failures: LoadFailure[];
  /** The slowest answer in the window, ms. */
  maxMs: number;
}

export class LoadCollector {
  private readonly pods = new Map<string, PodLog>();
  private stopped = false;
  private poller: NodeJS.Timeout | undefined;

  constructor(
    private readonly driver: Driver,
    private readonly ns: string,
    private readonly selector: string,
    private readonly log: (line: string) => void = () => undefined,
  ) {}

  /** Starts following every pod of the selector, now and as they appear. */
  start(): void {
    const poll = async () => {
      if (this.stopped) return;
      const r = await this.driver.kubectl([
        'get',
        'pods',
        '-n',
        this.ns,
        '-l',
        this.selector,
        '-o',
        'jsonpath={range .items[*]}{.metadata.name} {.status.containerStatuses[?(@.name=="load")].state}{"\\n"}{end}',
      ]);
      if (r.code === 0) {
        for (const line of r.stdout.split('\n')) {
          const [pod, state] = [line.slice(0, line.indexOf(' ')), line.slice(line.indexOf(' ') + 1)];
          if (!pod || this.pods.has(pod) || !state.includes('running')) continue;
          const p = new PodLog(pod);
          this.pods.set(pod, p);
          this.follow(p);
        }
      }
      // Every 2 s (a kubectl is a tenth of a second of CPU here); a new pod's log is read from its start.
      this.poller = setTimeout(() => void poll(), 2000);
    };
    void poll();
  }

  private follow(p: PodLog): void {
    if (this.stopped || p.done) return;
    let text = '';
    const child = spawn(kubectlPath(), [...this.driver.kubeArgs(), 'logs', '-f', '-n', this.ns, p.pod, '-c', 'load'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    p.child = child;
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d: string) => {
      text += d;
      // Each follow starts from the beginning of the log: keep the longest copy.
      if (text.length >= p.text.length) p.text = text;
    });
    child.stderr.resume();
    child.on('close', () => {
      p.child = undefined;
      if (this.stopped) return;
      if (p.parsed().ticks.some((t) => t.final)) {
        p.done = true;
        return;
      }
      // Cut (API server restart) or the pod is gone: follow again while the pod exists.
      void this.driver.kubectl(['get', 'pod', '-n', this.ns, p.pod, '-o', 'name']).then((r) => {
        if (r.code !== 0 && /NotFound|not found/.test(r.stderr)) {
          p.done = true;
          this.log(`[load] ${p.pod}: gone without a final line (its last counts are from the last tick)`);
          return;
        }
        setTimeout(() => this.follow(p), 1000);
      });
    });
  }

  stop(): void {
    this.stopped = true;
    if (this.poller) clearTimeout(this.poller);
    for (const p of this.pods.values()) p.child?.kill();
  }

  podNames(): string[] {
    return [...this.pods.keys()];
  }

  /** Cumulative counts summed over the pods, each at its last tick at or before `at`. */
  totalsAt(at: number): { sent: number; ok: number; failed: number } {
    const sum = { sent: 0, ok: 0, failed: 0 };
    for (const p of this.pods.values()) {
      const ticks = p.parsed().ticks.filter((t) => t.t <= at);
      const last = ticks.at(-1);
      if (!last) continue;
      sum.sent += last.sent;
      sum.ok += last.ok;
      sum.failed += last.failed;
    }
    return sum;
  }

  /** Requests in flight at `at`, summed over the pods (each at its last tick at or before it). */
  inflightAt(at: number): number {
    let n = 0;
    for (const p of this.pods.values()) {
      const last = p
        .parsed()
        .ticks.filter((t) => t.t <= at)
        .at(-1);
      if (last && !last.final && at - last.t < 3000) n += last.inflight;
    }
    return n;
  }

  /** The newest tick time over all pods (0 before the first). */
  lastTick(): number {
    let t = 0;
    for (const p of this.pods.values()) t = Math.max(t, p.parsed().ticks.at(-1)?.t ?? 0);
    return t;
  }

  /** Requests between two instants (tick resolution, 1 s) and every failure sent in it (exact). */
  window(from: number, to: number): LoadWindow {
    const a = this.totalsAt(from);
    const b = this.totalsAt(to);
    const failures: LoadFailure[] = [];
    let maxMs = 0;
    for (const p of this.pods.values()) {
      const { ticks, failures: f } = p.parsed();
      failures.push(...f.filter((x) => x.sent > from && x.sent <= to));
      for (const t of ticks) if (t.t > from && t.t <= to) maxMs = Math.max(maxMs, t.maxMs);
    }
    return { sent: b.sent - a.sent, ok: b.ok - a.ok, failed: b.failed - a.failed, failures, maxMs };
  }

  /** Each pod's ticks between two instants, one line each (to show a stall: in flight, slowest answer). */
  ticksBetween(from: number, to: number, base = from): string[] {
    const out: string[] = [];
    for (const p of this.pods.values())
      for (const t of p.parsed().ticks)
        if (t.t > from && t.t <= to)
          out.push(
            `${p.pod} +${((t.t - base) / 1000).toFixed(1)}s sent ${t.sent} ok ${t.ok} failed ${t.failed} in flight ${t.inflight} slowest ${t.maxMs} ms`,
          );
    return out;
  }

  /** Each pod's whole log so far (ticks and failures), for the artifacts. */
  logs(): Map<string, string> {
    return new Map([...this.pods].map(([pod, p]) => [pod, p.text]));
  }

  /** Every failure so far. */
  allFailures(): LoadFailure[] {
    return [...this.pods.values()].flatMap((p) => p.parsed().failures);
  }
}
