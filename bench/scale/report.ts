// Draws one scale run (bench/scale/runs.json): a plot of each figure against cluster size
// (docs/scale/<figure>.svg) and the table, written into docs/scale.md between its result markers.
//   npx tsx bench/scale/report.ts [run id]      (default: the newest run)
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { linePlot, type Series } from '../lib/svg-plot.js';
import { loadRuns, type ScaleRun } from './runs.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const docs = join(here, '..', '..', 'docs');

export interface FigureSpec {
  key: string;
  title: string;
  unit: string;
  /** Where the issue sets a goal at 5,000 pods: the largest minimesh / Linkerd ratio allowed. */
  goalRatio?: number;
  /** An absolute goal (e.g. 0 errors). */
  goal?: number;
}

export const FIGURES: FigureSpec[] = [
  { key: 'destination.rssMb', title: 'destination RSS with every stream open', unit: 'MB', goalRatio: 1.0 },
  { key: 'destination.rssPeakMb', title: 'destination RSS peak during churn', unit: 'MB' },
  { key: 'destination.readyMs', title: 'destination: start to ready', unit: 'ms' },
  { key: 'destination.cpuStartS', title: 'destination CPU to start (list + index)', unit: 's' },
  { key: 'destination.cpuOpenS', title: 'destination CPU to open the Get streams', unit: 's' },
  { key: 'destination.cpuChurnCores', title: 'destination CPU during churn', unit: 'cores' },
  { key: 'destination.propagationP50Ms', title: 'endpoint propagation p50 during churn', unit: 'ms' },
  { key: 'destination.propagationP99Ms', title: 'endpoint propagation p99 during churn', unit: 'ms', goalRatio: 1.3 },
  { key: 'destination.watches', title: 'API watches opened by destination', unit: '' },
  { key: 'policy.rssMb', title: 'policy controller RSS with every stream open', unit: 'MB', goalRatio: 1.0 },
  { key: 'policy.readyMs', title: 'policy controller: start to ready', unit: 'ms' },
  { key: 'policy.cpuOpenS', title: 'policy controller CPU to open the policy streams', unit: 's' },
  { key: 'policy.cpuChurnCores', title: 'policy controller CPU during churn', unit: 'cores' },
  { key: 'policy.propagationP50Ms', title: 'policy propagation p50 (Server change → inbound watches)', unit: 'ms' },
  { key: 'policy.propagationP99Ms', title: 'policy propagation p99', unit: 'ms' },
  { key: 'identity.rssIdleMb', title: 'identity RSS, idle', unit: 'MB' },
  { key: 'identity.stormMs', title: 'identity: certify every pod at once (restart storm)', unit: 'ms', goalRatio: 1.0 },
  { key: 'identity.stormErrors', title: 'identity: failed Certify calls in the storm', unit: '', goal: 0 },
  { key: 'identity.rssStormPeakMb', title: 'identity RSS peak in the storm', unit: 'MB' },
  { key: 'identity.cpuStormS', title: 'identity CPU for the storm', unit: 's' },
  { key: 'api.cpuOpenS', title: 'API server CPU while the streams open', unit: 's' },
  { key: 'api.cpuChurnCores', title: 'API server CPU during churn', unit: 'cores', goalRatio: 1.0 },
  { key: 'api.cpuStormS', title: 'API server CPU for the storm (TokenReviews)', unit: 's' },
  { key: 'streams.getOpenMs', title: 'every destination Get has its first answer', unit: 'ms' },
  { key: 'streams.outboundOpenMs', title: 'every outbound policy watch has its first answer', unit: 'ms' },
  { key: 'streams.inboundOpenMs', title: 'every inbound policy watch has its first answer', unit: 'ms' },
  { key: 'views.divergingStreams', title: 'Get streams whose final view differs from the API', unit: '', goal: 0 },
  { key: 'injector.baselineCreateP50Ms', title: 'pod creation without a webhook (baseline), p50', unit: 'ms' },
  { key: 'injector.baselineCreateP99Ms', title: 'pod creation without a webhook (baseline), p99', unit: 'ms' },
  { key: 'injector.createP50Ms', title: 'pod creation through the injector, p50', unit: 'ms' },
  { key: 'injector.createP99Ms', title: 'pod creation through the injector, p99', unit: 'ms' },
  { key: 'injector.errors', title: 'pod creations that failed through the injector', unit: '' },
];

function value(run: ScaleRun, size: string, key: string): { minimesh?: number; linkerd?: number } {
  const s = run.sizes[size]?.subjects ?? {};
  const pick = (name: string) => s[name]?.figures[key];
  if (key.startsWith('injector.')) return { minimesh: pick('injector') };
  return { minimesh: pick('minimesh'), linkerd: pick('linkerd') };
}

const fmt = (v: number | undefined): string =>
  v === undefined || !Number.isFinite(v) ? '–' : v >= 100 ? String(Math.round(v)) : String(Number(v.toPrecision(3)));

/** The Markdown table: one row per figure and size, minimesh beside Linkerd and their ratio. */
export function table(run: ScaleRun): string {
  const sizes = Object.keys(run.sizes).sort((a, b) => Number(a) - Number(b));
  const head = `| figure | unit | ${sizes.map((s) => `${s} pods: minimesh / Linkerd (ratio)`).join(' | ')} |`;
  const rows = FIGURES.map((f) => {
    const cells = sizes.map((size) => {
      const v = value(run, size, f.key);
      if (v.linkerd === undefined) return fmt(v.minimesh);
      const ratio = v.minimesh !== undefined && v.linkerd ? ` (${(v.minimesh / v.linkerd).toFixed(2)}x)` : '';
      return `${fmt(v.minimesh)} / ${fmt(v.linkerd)}${ratio}`;
    });
    return `| ${f.title} | ${f.unit} | ${cells.join(' | ')} |`;
  });
  return [head, `|---|---|${sizes.map(() => '---').join('|')}|`, ...rows].join('\n');
}

export function plots(run: ScaleRun, outDir: string): string[] {
  mkdirSync(outDir, { recursive: true });
  const sizes = Object.keys(run.sizes).sort((a, b) => Number(a) - Number(b));
  const written: string[] = [];
  for (const f of FIGURES) {
    const series: Series[] = [];
    for (const who of ['minimesh', 'linkerd'] as const) {
      const points = sizes
        .map((s) => [Number(s), value(run, s, f.key)[who]] as [number, number | undefined])
        .filter((p): p is [number, number] => p[1] !== undefined && Number.isFinite(p[1]));
      if (points.length > 0) series.push({ name: who === 'minimesh' ? 'minimesh' : 'Linkerd edge-26.8.3', points });
    }
    if (series.length === 0) continue;
    const file = `${f.key.replace(/\./g, '-')}.svg`;
    writeFileSync(
      join(outDir, file),
      linePlot({ title: f.title, xLabel: 'pods in the cluster', yLabel: f.unit || 'count', series }),
    );
    written.push(file);
  }
  // a figure this run has no value for (or one no longer drawn) leaves no stale plot behind
  for (const f of readdirSync(outDir)) if (f.endsWith('.svg') && !written.includes(f)) rmSync(join(outDir, f));
  return written;
}

const START = '<!-- scale:results:start -->';
const END = '<!-- scale:results:end -->';

function main(): void {
  const runs = loadRuns(join(here, 'runs.json'));
  const id = process.argv[2];
  const run = id ? runs.find((r) => r.id === id) : runs.at(-1);
  if (!run) throw new Error(id ? `no run ${id} in bench/scale/runs.json` : 'bench/scale/runs.json holds no run yet');
  const files = plots(run, join(docs, 'scale'));
  const s = run.settings;
  const body = [
    START,
    `Run \`${run.id}\` (commit ${run.commit}, ${run.date.slice(0, 10)}, Node ${run.node}; ${s.clients} client proxies, churn ${s.churnPodsPerS} pods/s for ${s.churnSeconds} s, injector at ${s.injectRate} pods/s). Raw numbers: \`bench/scale/runs.json\`.`,
    '',
    table(run),
    '',
    ...files.map((f) => `![${f}](scale/${f})`),
    END,
  ].join('\n');
  const doc = join(docs, 'scale.md');
  const text = readFileSync(doc, 'utf8');
  const a = text.indexOf(START);
  const b = text.indexOf(END);
  if (a < 0 || b < 0) throw new Error(`${doc} has no ${START} … ${END} markers`);
  writeFileSync(doc, text.slice(0, a) + body + text.slice(b + END.length));
  console.log(`docs/scale.md: table of ${Object.keys(run.sizes).length} size(s), ${files.length} plots in docs/scale/`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
