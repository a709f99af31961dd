// Where this machine's CPU went, second by second, while a spec ran: how busy all cores were and which
// processes used most, each named by the pod and program it belongs to ("load-7f9c…/proxy") or, outside
// the cluster's pods, by its program ("kube-apiserver", "go compile"). The fault specs put this beside
// failed requests: a request that waited 10 s behind a busy machine and one lost by the mesh read
// differently. Beside each one's CPU, how long it waited for a CPU (/proc/<pid>/schedstat: time runnable
// but not running): a process that waited ten times as long as it ran was starved by the machine, not
// slow of its own. Linux only (/proc); the local cluster's pods are this machine's processes.
import { readFileSync, readdirSync } from 'node:fs';

export interface CpuSample {
  /** End of the interval (epoch ms). */
  t: number;
  /** Busy share of all cores over the interval, 0-100. */
  busy: number;
  /** The heaviest users: who, their share of one core (100 = a whole core), and how long they waited for one (same unit). */
  top: Array<{ who: string; pct: number; waitPct: number }>;
  /** Every pod's processes together (by pod name), same units. */
  pods: Map<string, { pct: number; waitPct: number }>;
}

const TICKS_PER_SECOND = 100;

function readTotals(): { total: number; idle: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const idle = (v[3] ?? 0) + (v[4] ?? 0);
  return { total: v.reduce((a, b) => a + b, 0), idle };
}

/** utime + stime (ticks) of one process, or undefined when it is gone. */
function readTicks(pid: string): number | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 (utime, stime); `rest` starts at field 3.
    return Number(rest[11]) + Number(rest[12]);
  } catch {
    return undefined;
  }
}

/** "who" for a process: its pod (by the pod UID in its cgroup) and program, or its program alone. */
function describe(pid: string, podOfUid: (uid: string) => string | undefined): string {
  let cmd: string[] = [];
  try {
    cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return '?';
  }
  const base = (p: string | undefined) => (p ?? '?').split('/').pop() ?? '?';
  // node <script>: the package or file it runs (…/packages/proxy/dist/main.js → proxy).
  let program = base(cmd[0]);
  if (program === 'node' || program === 'tsx') {
    const script = cmd.slice(1).find((a) => !a.startsWith('-')) ?? '';
    const pkg = /packages\/([^/]+)\//.exec(script)?.[1];
    program = pkg ?? base(script);
  } else if (program === 'go' || program === 'compile' || program === 'link') program = `go ${program}`;
  try {
    const uid = /pod([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/.exec(
      readFileSync(`/proc/${pid}/cgroup`, 'utf8').replace(/_/g, '-'),
    )?.[1];
    if (uid) return `${podOfUid(uid) ?? `pod ${uid.slice(0, 8)}`}/${program}`;
  } catch {
    /* gone */
  }
  return program;
}

/** Nanoseconds a process has waited runnable for a CPU (schedstat's 2nd field), or undefined. */
function readWaitNs(pid: string): number | undefined {
  try {
    const v = Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1]);
    return Number.isFinite(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

export class CpuSampler {
  readonly samples: CpuSample[] = [];
  private timer: NodeJS.Timeout | undefined;
  private last:
    | { t: number; totals: { total: number; idle: number }; ticks: Map<string, number>; waits: Map<string, number> }
    | undefined;
  private readonly names = new Map<string, string>();

  /** @param podOfUid the pod a UID belongs to ("ns/name"), when known */
  constructor(private readonly podOfUid: (uid: string) => string | undefined = () => undefined) {}

  start(everyMs = 1000): void {
    this.last = { t: Date.now(), totals: readTotals(), ticks: this.readAll(), waits: new Map() };
    this.timer = setInterval(() => this.sample(), everyMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private readAll(): Map<string, number> {
    const out = new Map<string, number>();
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      const t = readTicks(pid);
      if (t !== undefined) out.set(pid, t);
    }
    return out;
  }

  private sample(): void {
    if (!this.last) return;
    const now = Date.now();
    const totals = readTotals();
    const ticks = this.readAll();
    const waits = new Map<string, number>();
    const dTotal = totals.total - this.last.totals.total;
    const busy = dTotal > 0 ? 100 * (1 - (totals.idle - this.last.totals.idle) / dTotal) : 0;
    const seconds = (now - this.last.t) / 1000;
    const byWho = new Map<string, { pct: number; waitPct: number }>();
    for (const [pid, t] of ticks) {
      const d = t - (this.last.ticks.get(pid) ?? t);
      const known = this.last.waits.get(pid);
      if (d <= 0) {
        if (known !== undefined) waits.set(pid, known);
        continue;
      }
      let who = this.names.get(pid);
      if (!who || who.startsWith('pod ')) {
        who = describe(pid, this.podOfUid);
        this.names.set(pid, who);
      }
      // The wait of the processes that ran (a process that never got a CPU in a second is rare).
      const w = readWaitNs(pid);
      if (w !== undefined) waits.set(pid, w);
      const dWait = w !== undefined && known !== undefined ? Math.max(0, w - known) : 0;
      const e = byWho.get(who) ?? { pct: 0, waitPct: 0 };
      e.pct += (100 * d) / TICKS_PER_SECOND / seconds;
      e.waitPct += (100 * dWait) / 1e9 / seconds;
      byWho.set(who, e);
    }
    const top = [...byWho]
      .sort((a, b) => b[1].pct - a[1].pct)
      .slice(0, 6)
      .map(([who, e]) => ({ who, pct: Math.round(e.pct), waitPct: Math.round(e.waitPct) }));
    const pods = new Map<string, { pct: number; waitPct: number }>();
    for (const [who, e] of byWho) {
      const i = who.indexOf('/');
      if (i < 0 || who.startsWith('pod ')) continue;
      const p = pods.get(who.slice(0, i)) ?? { pct: 0, waitPct: 0 };
      p.pct += e.pct;
      p.waitPct += e.waitPct;
      pods.set(who.slice(0, i), p);
    }
    this.samples.push({ t: now, busy: Math.round(busy), top, pods });
    this.last = { t: now, totals, ticks, waits };
  }

  /** One line per second between two instants, times relative to `base`. */
  between(from: number, to: number, base: number): string[] {
    return this.samples
      .filter((s) => s.t >= from && s.t <= to)
      .map(
        (s) =>
          `+${((s.t - base) / 1000).toFixed(1)}s cpu ${s.busy}% busy: ${s.top.map((x) => `${x.who} ${x.pct}% (waited ${x.waitPct}%)`).join(', ')}`,
      );
  }

  /**
   * The mean CPU share and wait (share of one core) of the pods whose name starts with `prefix` between
   * two instants: "ran 9 %, waited 80 %" is a starved pod.
   */
  podShare(from: number, to: number, prefix: string): { pct: number; waitPct: number } {
    const s = this.samples.filter((x) => x.t >= from && x.t <= to);
    if (s.length === 0) return { pct: 0, waitPct: 0 };
    let pct = 0;
    let waitPct = 0;
    for (const x of s)
      for (const [pod, e] of x.pods)
        if (pod.startsWith(prefix)) {
          pct += e.pct;
          waitPct += e.waitPct;
        }
    return { pct: Math.round(pct / s.length), waitPct: Math.round(waitPct / s.length) };
  }

  /** The mean busy share between two instants. */
  meanBusy(from: number, to: number): number {
    const s = this.samples.filter((x) => x.t >= from && x.t <= to);
    return s.length ? Math.round(s.reduce((a, b) => a + b.busy, 0) / s.length) : 0;
  }
}
