// The scale bench's raw numbers: bench/scale/runs.json holds runs (newest last, at most 10), each with
// its sizes, each size with one result per subject (minimesh, linkerd) and the injector's.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

export interface SizeResult {
  /** Figure name ("destination.rssMb") → value; units are in the name (Ms, S, Mb, Cores) or counts. */
  figures: Record<string, number>;
  raw: Record<string, unknown>;
}

export interface ScaleRun {
  id: string;
  date: string;
  commit: string;
  node: string;
  settings: Record<string, number>;
  /** Pod count → how long the workload took to be Ready, and the results. */
  sizes: Record<string, { workloadReadyS: number; subjects: Record<string, SizeResult> }>;
  /** Leader kill and API server restart at `size` pods (reliability.ts). */
  reliability?: { size: number; leaderKill?: Record<string, unknown>; apiServerRestart?: Record<string, unknown> };
}

export function loadRuns(file: string): ScaleRun[] {
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as ScaleRun[]) : [];
}

export function saveRuns(file: string, runs: ScaleRun[]): void {
  writeFileSync(file, `${JSON.stringify(runs.slice(-10), null, 2)}\n`);
}
