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
  uid: string;
  phase: string;
  /** `phase ready=<True|False|> ip=<ip>`, plus `deleting` once the pod is marked for deletion. */
  state: string;
}

// One line per event, fields split by '|' (no pod field can hold one).
const COLUMNS =
  '{.metadata.name}|{.metadata.uid}|{.status.phase}|{.status.conditions[?(@.type=="Ready")].status}|{.status.podIP}|{.metadata.deletionTimestamp}{"\\n"}';

export class PodWatch {
  readonly changes: PodChange[] = [];
  private readonly last = new Map<string, string>();
  private readonly children = new Set<ChildProcess>();
  private readonly listeners: Array<(c: PodChange) => void> = [];
  private readonly uids = new Map<string, string>();
  private stopped = false;

  constructor(
    private readonly driver: Driver,
    private readonly namespaces: readonly string[],
  ) {}

  /** Calls `listener` with every change from now on. */
  onChange(listener: (c: PodChange) => void): void {
    this.listeners.push(listener);
  }

  /** "ns/name" of a pod UID seen so far. */
  podOfUid(uid: string): string | undefined {
    return this.uids.get(uid);
  }

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
    const [pod, uid = '', phase = '', ready = '', ip = '', deleting = ''] = line.trim().split('|');
    if (!pod) return;
    const state = `${phase} ready=${ready || '-'} ip=${ip || '-'}${deleting ? ' deleting' : ''}`;
    const key = `${ns}/${pod}`;
    if (uid) this.uids.set(uid, key);
    if (this.last.get(key) === state) return;
    this.last.set(key, state);
    const change = { at: Date.now(), ns, pod, uid, phase, state };
    this.changes.push(change);
    for (const l of this.listeners) l(change);
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
