// Every container's log of the pods a spec watches, kept as it is written (`kubectl logs -f
// --all-containers --timestamps --prefix`, one file per pod), so the logs of a pod that a rollout deleted
// are still there when a failure needs them. Followed again when the stream is cut (an API server
// restart), from the last second seen.
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import type { Driver } from '../drivers/types.js';
import type { PodChange } from './pod-watch.js';
import { kubectlPath } from './tools.js';

interface Followed {
  child?: ChildProcess;
  /** The last timestamp written, to follow again from there. */
  since?: string;
  phase: string;
  done: boolean;
}

export class LogFollower {
  private readonly following = new Map<string, Followed>();
  private stopped = false;

  /** @param fileOf where a pod's log goes ("ns/name" → path) */
  constructor(
    private readonly driver: Driver,
    private readonly fileOf: (ns: string, pod: string) => string,
  ) {}

  /** Feed it the pod watch's changes: a pod is followed once it runs, until it is gone. */
  seen(c: PodChange): void {
    const key = `${c.ns}/${c.pod}`;
    const f = this.following.get(key);
    if (f) f.phase = c.phase;
    else if (c.phase === 'Running' || c.phase === 'Succeeded' || c.phase === 'Failed') {
      const entry: Followed = { phase: c.phase, done: false };
      this.following.set(key, entry);
      this.follow(c.ns, c.pod, entry);
    }
  }

  private follow(ns: string, pod: string, entry: Followed): void {
    if (this.stopped || entry.done) return;
    const file = this.fileOf(ns, pod);
    const args = [
      ...this.driver.kubeArgs(),
      'logs',
      '-f',
      '-n',
      ns,
      pod,
      '--all-containers',
      '--prefix',
      '--timestamps',
      '--max-log-requests=10',
    ];
    if (entry.since) args.push(`--since-time=${entry.since}`);
    const child = spawn(kubectlPath(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
    entry.child = child;
    let buf = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d: string) => {
      buf += d;
      const i = buf.lastIndexOf('\n');
      if (i < 0) return;
      const lines = buf.slice(0, i + 1);
      buf = buf.slice(i + 1);
      appendFileSync(file, lines);
      // The last timestamp seen (the second field: "[pod/x/container] 2026-…Z message").
      const m = /\] (\d{4}-\d\d-\d\dT[\d:.]+Z) [^\n]*\n$/.exec(lines);
      if (m) entry.since = m[1];
    });
    child.stderr.resume();
    child.on('close', () => {
      entry.child = undefined;
      if (buf) appendFileSync(file, `${buf}\n`);
      if (this.stopped) return;
      // Every container has ended: its log is complete.
      if (entry.phase === 'Succeeded' || entry.phase === 'Failed') {
        entry.done = true;
        return;
      }
      void this.driver.kubectl(['get', 'pod', '-n', ns, pod, '-o', 'name']).then((r) => {
        if (r.code !== 0 && /NotFound|not found/.test(r.stderr)) {
          entry.done = true;
          return;
        }
        setTimeout(() => this.follow(ns, pod, entry), 1000);
      });
    });
  }

  stop(): void {
    this.stopped = true;
    for (const f of this.following.values()) f.child?.kill();
  }
}
