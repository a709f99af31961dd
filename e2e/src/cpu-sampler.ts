// Where this machine's CPU went, second by second, while a spec ran: how busy all cores were and which
// processes used most, each named by the pod and program it belongs to ("load-7f9c…/proxy") or, outside
// the cluster's pods, by its program ("kube-apiserver", "go compile"). The fault specs put this beside
// failed requests: a request that waited 10 s behind a busy machine and one lost by the mesh read
// differently. Linux only (/proc); the local cluster's pods are this machine's processes.
import { readFileSync, readdirSync } from 'node:fs';

export interface CpuSample {
  /** End of the interval (epoch ms). */
  t: number;
  /** Busy share of all cores over the interval, 0-100. */
  busy: number;
  /** The heaviest users: who, and their share of one core (100 = a whole core). */
  top: Array<{ who: string; pct: number }>;
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

export class CpuSampler {
  readonly samples: CpuSample[] = [];
  private timer: NodeJS.Timeout | undefined;
  private last: { t: number; totals: { total: number; idle: number }; ticks: Map<string, number> } | undefined;
  private readonly names = new Map<string, string>();

  /** @param podOfUid the pod a UID belongs to ("ns/name"), when known */
  constructor(private readonly podOfUid: (uid: string) => string | undefined = () => undefined) {}

  start(everyMs = 1000): void {
    this.last = { t: Date.now(), totals: readTotals(), ticks: this.readAll() };
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
    const dTotal = totals.total - this.last.totals.total;
    const busy = dTotal > 0 ? 100 * (1 - (totals.idle - this.last.totals.idle) / dTotal) : 0;
    const seconds = (now - this.last.t) / 1000;
    const byWho = new Map<string, number>();
    for (const [pid, t] of ticks) {
      const d = t - (this.last.ticks.get(pid) ?? t);
      if (d <= 0) continue;
      let who = this.names.get(pid);
      if (!who || who.startsWith('pod ')) {
        who = describe(pid, this.podOfUid);
        this.names.set(pid, who);
      }
      byWho.set(who, (byWho.get(who) ?? 0) + (100 * d) / TICKS_PER_SECOND / seconds);
    }
    const top = [...byWho]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 6)
      .map(([who, pct]) => ({ who, pct: Math.round(pct) }));
    this.samples.push({ t: now, busy: Math.round(busy), top });
    this.last = { t: now, totals, ticks };
  }

  /** One line per second between two instants, times relative to `base`. */
  between(from: number, to: number, base: number): string[] {
    return this.samples
      .filter((s) => s.t >= from && s.t <= to)
      .map(
        (s) =>
          `+${((s.t - base) / 1000).toFixed(1)}s cpu ${s.busy}% busy: ${s.top.map((x) => `${x.who} ${x.pct}%`).join(', ')}`,
      );
  }

  /** The mean busy share between two instants. */
  meanBusy(from: number, to: number): number {
    const s = this.samples.filter((x) => x.t >= from && x.t <= to);
    return s.length ? Math.round(s.reduce((a, b) => a + b.busy, 0) / s.length) : 0;
  }
}
