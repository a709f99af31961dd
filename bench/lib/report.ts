// Bench results: the raw numbers of each run kept as JSON (bench/<name>/runs.json, newest last, at most
// 20), and a table of this run beside the previous one. Figures are plain numbers with a unit and a
// direction, so the table can say which way is better.
import { execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';

export interface Figure {
  value: number;
  unit: string;
  /** Which way is better. */
  better: 'lower' | 'higher';
  /** Linkerd's figure on this machine, where one was measured (the package README says when and how). */
  linkerd?: number;
  /** The goal, as a number in the same unit. */
  goal?: number;
}

export interface Run {
  bench: string;
  date: string;
  commit: string;
  node: string;
  loadavg: number[];
  /** What was measured (e.g. "bundle/main.mjs"). */
  subject: string;
  figures: Record<string, Figure>;
  /** Anything else worth keeping (samples, settings). */
  raw?: Record<string, unknown>;
}

export function newRun(bench: string, subject: string): Run {
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    // not a git checkout
  }
  return {
    bench,
    date: new Date().toISOString(),
    commit,
    node: process.version,
    loadavg: loadavg().map((l) => Math.round(l * 100) / 100),
    subject,
    figures: {},
  };
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

export const round = (n: number, digits = 2): number => Math.round(n * 10 ** digits) / 10 ** digits;

/** Appends the run to the history file and returns the previous run, if any. */
export function saveRun(file: string, run: Run): Run | undefined {
  const runs: Run[] = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Run[]) : [];
  const previous = runs.at(-1);
  runs.push(run);
  writeFileSync(file, `${JSON.stringify(runs.slice(-20), null, 2)}\n`);
  return previous;
}

/** A Markdown table: figure, this run, the previous run, the change; Linkerd and the goal where known. */
export function table(run: Run, previous: Run | undefined): string {
  const fmt = (f: Figure | undefined): string =>
    f === undefined || !Number.isFinite(f.value) ? '–' : `${f.value} ${f.unit}`;
  const rows = Object.entries(run.figures).map(([name, f]) => {
    const p = previous?.figures[name];
    let change = '';
    if (p && Number.isFinite(p.value) && p.value !== 0) {
      const ratio = f.value / p.value;
      const better = f.better === 'lower' ? ratio < 0.97 : ratio > 1.03;
      const worse = f.better === 'lower' ? ratio > 1.03 : ratio < 0.97;
      change = `${ratio.toFixed(2)}x${better ? ' better' : worse ? ' worse' : ''}`;
    }
    const linkerd = f.linkerd !== undefined ? `${f.linkerd} ${f.unit} (${(f.value / f.linkerd).toFixed(2)}x)` : '';
    const goal =
      f.goal !== undefined
        ? `${f.better === 'lower' ? '≤' : '≥'} ${f.goal} ${f.unit}${(f.better === 'lower' ? f.value <= f.goal : f.value >= f.goal) ? ' ✔' : ' ✖'}`
        : '';
    return `| ${name} | ${fmt(f)} | ${fmt(p)} | ${change} | ${linkerd} | ${goal} |`;
  });
  const head =
    `${run.bench} — ${run.date} (${run.commit}), ${run.subject}, Node ${run.node}, load average ${run.loadavg.join(' / ')}` +
    (previous ? `; previous: ${previous.date} (${previous.commit})` : '; no previous run');
  return [
    head,
    '',
    '| figure | this run | previous | change | Linkerd (ratio) | goal |',
    '|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

let currentPhase = 'start';
const phaseSince = { at: Date.now() };

/** Names the step the bench is in (one line on stderr), so a stuck run says where it is stuck. */
export function phase(name: string): void {
  currentPhase = name;
  phaseSince.at = Date.now();
  process.stderr.write(`[bench] ${new Date().toISOString().slice(11, 19)} ${name}\n`);
}

/**
 * Ends the bench with exit 1 and the step it was in when it runs longer than limitMs (BENCH_TIMEOUT_S
 * overrides): a bench holds the machine's cluster lock, so it must never wait forever. onTimeout kills
 * what the bench started.
 */
export function watchdog(limitMs: number, onTimeout: () => void): void {
  const ms = process.env.BENCH_TIMEOUT_S ? Number(process.env.BENCH_TIMEOUT_S) * 1000 : limitMs;
  setTimeout(() => {
    process.stderr.write(
      `[bench] gave up after ${Math.round(ms / 1000)} s, ${Math.round((Date.now() - phaseSince.at) / 1000)} s into: ${currentPhase}\n`,
    );
    try {
      onTimeout();
    } finally {
      process.exit(1);
    }
  }, ms).unref();
}

/**
 * SIGTERM, then waits for the exit (SIGKILL after graceMs); says how the process ended, also when it had
 * already ended (exitCode stays null for a process killed by a signal, and its 'exit' has been emitted).
 */
export async function stopProcess(child: ChildProcess, graceMs = 40_000): Promise<string> {
  const ended = () => (child.signalCode ? `signal ${child.signalCode}` : `exit ${child.exitCode}`);
  if (child.exitCode !== null || child.signalCode !== null) return `had already ended (${ended()})`;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const inTime = await Promise.race([
    exited.then(() => true),
    new Promise<false>((r) => (timer = setTimeout(() => r(false), graceMs))),
  ]);
  clearTimeout(timer);
  if (inTime) return `stopped on SIGTERM (${ended()})`;
  child.kill('SIGKILL');
  await exited;
  return `did not exit within ${graceMs / 1000} s of SIGTERM: killed`;
}
