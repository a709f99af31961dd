// A record of what happened to the pods of some namespaces while a spec ran: every change of a pod's
// phase, readiness, deletion mark or IP as `kubectl get pods --watch` reports it, with the time it was
// seen. The fault specs put these next to failed requests ("the server pod was marked for deletion at
// +41.2 s; the first 502 was sent at +44.3 s"). Followed again when the API server cuts the watch.
import { spawn, type ChildProcess } from 'node:child_process';
import type { Driver } from '../drivers/types.js';
import { kubectlPath } from './tools.js';

export interface PodChange {
  /** When it was seen (epoch ms). */
  at: number;
  ns: string;
  pod: string;
  /** `phase ready=<True|False|> ip=<ip>`, plus `deleting` once the pod is marked for deletion. */
  state: string;
}

const COLUMNS =
  '{.metadata.name}{"\\t"}{.status.phase}{"\\t"}{.status.conditions[?(@.type=="Ready")].status}{"\\t"}{.status.podIP}{"\\t"}{.metadata.deletionTimestamp}{"\\n"}';

export class PodWatch {
  readonly changes: PodChange[] = [];
  private readonly last = new Map<string, string>();
  private readonly children = new Set<ChildProcess>();
  private stopped = false;

  constructor(
    private readonly driver: Driver,
    private readonly namespaces: readonly string[],
  ) {}

  start(): void {
    for (const ns of this.namespaces) this.follow(ns);
  }

  private follow(ns: string): void {
    if (this.stopped) return;
    const child = spawn(
      kubectlPath(),
      [...this.driver.kubeArgs(), 'get', 'pods', '-n', ns, '--watch', '-o', `jsonpath=${COLUMNS}`],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    this.children.add(child);
    let buf = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d: string) => {
      buf += d;
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        this.seen(ns, buf.slice(0, i));
        buf = buf.slice(i + 1);
      }
    });
    child.on('close', () => {
      this.children.delete(child);
      if (!this.stopped) setTimeout(() => this.follow(ns), 1000);
    });
  }

  private seen(ns: string, line: string): void {
    const [pod, phase = '', ready = '', ip = '', deleting = ''] = line.split('\t');
    if (!pod) return;
    const state = `${phase} ready=${ready || '-'} ip=${ip || '-'}${deleting ? ' deleting' : ''}`;
    const key = `${ns}/${pod}`;
    if (this.last.get(key) === state) return;
    this.last.set(key, state);
    this.changes.push({ at: Date.now(), ns, pod, state });
  }

  stop(): void {
    this.stopped = true;
    for (const c of this.children) c.kill();
  }

  /** The changes between two instants, one line each, times relative to `base`. */
  between(from: number, to: number, base: number): string[] {
    return this.changes
      .filter((c) => c.at >= from && c.at <= to)
      .map((c) => `+${((c.at - base) / 1000).toFixed(1)}s ${c.ns}/${c.pod} ${c.state}`);
  }
}
