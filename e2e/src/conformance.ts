// The Gateway API conformance suite (sigs.k8s.io/gateway-api/conformance v1.6.3, the Go test in
// conformance/) against a minimesh install: its flags as Linkerd's conformance run passes them, the
// features minimesh declares (conformance/features.txt), and what came out (the ConformanceReport the
// suite writes, and each test's PASS/FAIL from `go test -v`). npm run conformance (e2e/scripts/
// conformance.ts) and the CI subset share it.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { randomBytes } from 'node:crypto';
import { homedir } from 'node:os';
import { MINIMESH_VERSION } from '@minimesh/config';
import type { Driver } from '../drivers/types.js';
import {
  createMeshCerts,
  E2E_SCOPE_LABEL,
  ensureGatewayApiCrds,
  installChart,
  uninstallChart,
  waitForReadyPods,
  type MeshSetup,
} from './mesh.js';
import { repoRoot } from './tools.js';

export const CONFORMANCE_DIR = join(repoRoot, 'conformance');
export const GATEWAY_API_VERSION = 'v1.6.3';
export const MESH_PROFILES = ['MESH-HTTP', 'MESH-GRPC'] as const;
/**
 * Features the mesh profiles may name that minimesh does not serve: Gateway and ReferenceGrant are
 * north-south (Linkerd exempts them too).
 */
export const EXEMPT_FEATURES = ['Gateway', 'ReferenceGrant'] as const;

/** conformance/features.txt: one feature per line, "#" starts a comment. */
export function supportedFeatures(): string[] {
  return readFileSync(join(CONFORMANCE_DIR, 'features.txt'), 'utf8')
    .split('\n')
    .map((l) => l.replace(/#.*/, '').trim())
    .filter(Boolean);
}

export interface ConformanceRun {
  kubeconfig: string;
  /** Where the suite writes its ConformanceReport YAML. */
  report: string;
  /** Annotations and labels for the suite's namespaces (the injector's opt-in, the webhook's scope). */
  namespaceAnnotations: Record<string, string>;
  namespaceLabels?: Record<string, string>;
  /** Only these tests (by ShortName); absent: every test of the profiles. */
  tests?: readonly string[];
  /** Each line of the suite's output, as it comes. */
  onLine?: (line: string) => void;
}

export interface ConformanceResult {
  code: number;
  /** ShortName → PASS | FAIL | SKIP, from `go test -v`. */
  tests: Record<string, 'PASS' | 'FAIL' | 'SKIP'>;
  /** Why each failed test failed: the first lines the suite logged for it (its assertion messages). */
  failures: Record<string, string[]>;
  output: string;
}

const pairs = (o: Record<string, string>) =>
  Object.entries(o)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');

/** The suite's flags, as Linkerd's run passes them (profiles, features, namespace annotation, report). */
export function conformanceArgs(run: Omit<ConformanceRun, 'kubeconfig' | 'onLine'>): string[] {
  return [
    '--organization=minimesh',
    '--project=minimesh',
    '--url=https://github.com/minimesh/minimesh',
    `--version=${MINIMESH_VERSION}`,
    '--contact=https://github.com/minimesh/minimesh/issues',
    '--mode=default',
    `--conformance-profiles=${MESH_PROFILES.join(',')}`,
    `--supported-features=${supportedFeatures().join(',')}`,
    `--exempt-features=${EXEMPT_FEATURES.join(',')}`,
    `--namespace-annotations=${pairs(run.namespaceAnnotations)}`,
    ...(run.namespaceLabels ? [`--namespace-labels=${pairs(run.namespaceLabels)}`] : []),
    `--report-output=${run.report}`,
    // The base resources (the echo apps and their namespaces) go when the suite is done.
    '--cleanup-base-resources=true',
  ];
}

/** `go test -json` in conformance/ (the module proxy fetches the suite the first time; CGO off). */
export function runConformance(run: ConformanceRun): Promise<ConformanceResult> {
  const cache = process.env.MINIMESH_CACHE ?? join(process.env.HOME ?? '/root', '.cache', 'minimesh');
  const pattern = run.tests?.length ? `^TestConformance$/^(${run.tests.join('|')})$` : '^TestConformance$';
  const args = ['test', '-json', '-count=1', '-timeout=120m', '-run', pattern, '.', '-args', ...conformanceArgs(run)];
  return new Promise((resolve, reject) => {
    const child = spawn('nice', ['-n', '10', 'go', ...args], {
      cwd: CONFORMANCE_DIR,
      env: {
        ...process.env,
        KUBECONFIG: run.kubeconfig,
        GOMODCACHE: process.env.GOMODCACHE ?? join(cache, 'go', 'mod'),
        GOCACHE: process.env.GOCACHE ?? join(cache, 'go', 'build'),
        GOTOOLCHAIN: 'local',
        GOFLAGS: '-mod=mod',
        CGO_ENABLED: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const events: GoTestEvent[] = [];
    let output = '';
    let partial = '';
    const take = (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const l of lines) {
        let e: GoTestEvent | undefined;
        try {
          e = JSON.parse(l) as GoTestEvent;
        } catch {
          e = undefined;
        }
        const text = e ? (e.Output ?? '').replace(/\n$/, '') : l;
        if (e) events.push(e);
        if (e && e.Action !== 'output') continue;
        output += `${text}\n`;
        run.onLine?.(text);
      }
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('error', (err) => reject(new Error(`go test in ${CONFORMANCE_DIR}: ${err.message}`, { cause: err })));
    child.on('close', (code) => resolve({ code: code ?? 1, ...verdicts(events), output }));
  });
}

interface GoTestEvent {
  Action: string;
  Test?: string;
  Output?: string;
}

/** Each suite test's verdict and, for a failed one, the first assertion messages it logged. */
export function verdicts(events: readonly GoTestEvent[]): Pick<ConformanceResult, 'tests' | 'failures'> {
  const tests: ConformanceResult['tests'] = {};
  const failures: ConformanceResult['failures'] = {};
  const nameOf = (t: string | undefined) => /^TestConformance\/([^/]+)/.exec(t ?? '')?.[1];
  for (const e of events) {
    const name = nameOf(e.Test);
    if (!name) continue;
    if (e.Test === `TestConformance/${name}` && (e.Action === 'pass' || e.Action === 'fail' || e.Action === 'skip'))
      tests[name] = e.Action === 'pass' ? 'PASS' : e.Action === 'fail' ? 'FAIL' : 'SKIP';
    const text = (e.Output ?? '').trim();
    if (e.Action === 'output' && /\.go:\d+: /.test(text) && /expected|wanted|got |error|timed out|not /i.test(text)) {
      const list = (failures[name] ??= []);
      if (list.length < 3 && !list.includes(text)) list.push(text);
    }
  }
  for (const name of Object.keys(failures)) if (tests[name] !== 'FAIL') delete failures[name];
  return { tests, failures };
}

/** minimesh installed for the suite: where, and what its namespaces need to be meshed. */
export interface ConformanceInstall {
  mesh: MeshSetup;
  kubeconfig: string;
  namespaceAnnotations: Record<string, string>;
  namespaceLabels?: Record<string, string>;
  uninstall(): Promise<void>;
}

/**
 * The Gateway API CRDs (first, so the policy controller lists them when it starts) and the chart as a
 * user installs it; on the shared local cluster the injector sees only namespaces labelled for it.
 */
export async function installForConformance(driver: Driver, certDir: string): Promise<ConformanceInstall> {
  const mesh: MeshSetup = {
    driver,
    cpNs: driver.name === 'k3d' ? 'minimesh' : `minimesh-conformance-${randomBytes(3).toString('hex')}`,
    appNs: 'unused',
    release: 'minimesh',
    scopeWebhook: driver.name === 'local',
  };
  await ensureGatewayApiCrds(driver);
  await installChart(mesh, await createMeshCerts(certDir));
  try {
    for (const c of ['identity', 'destination', 'injector'])
      await waitForReadyPods(driver, mesh.cpNs, c, 1, 300_000, 'minimesh.io/control-plane-component');
  } catch (err) {
    if (driver.name === 'local') await uninstallChart(mesh).catch(() => undefined);
    throw err;
  }
  const args = driver.kubeArgs();
  const i = args.indexOf('--kubeconfig');
  return {
    mesh,
    kubeconfig:
      i >= 0 && args[i + 1] ? (args[i + 1] as string) : (process.env.KUBECONFIG ?? join(homedir(), '.kube', 'config')),
    namespaceAnnotations: { 'minimesh.io/inject': 'enabled' },
    ...(mesh.scopeWebhook ? { namespaceLabels: { [E2E_SCOPE_LABEL]: mesh.cpNs } } : {}),
    uninstall: () => (driver.name === 'local' ? uninstallChart(mesh) : Promise.resolve()),
  };
}

export interface ReportSummary {
  profiles: Array<{
    name: string;
    core: { result: string; passed: number; failed: number; skipped: number; failedTests: string[] };
    extended?: { result: string; passed: number; failed: number; skipped: number; failedTests: string[] };
  }>;
}

/** The counts of the ConformanceReport the suite wrote. */
export function summarizeReport(file: string): ReportSummary {
  type Part = {
    result: string;
    statistics: { Passed: number; Failed: number; Skipped: number };
    failedTests?: string[];
  };
  const report = parse(readFileSync(file, 'utf8')) as {
    profiles: Array<{ name: string; core: Part; extended?: Part }>;
  };
  const part = (p: Part) => ({
    result: p.result,
    passed: p.statistics.Passed,
    failed: p.statistics.Failed,
    skipped: p.statistics.Skipped,
    failedTests: p.failedTests ?? [],
  });
  return {
    profiles: report.profiles.map((p) => ({
      name: p.name,
      core: part(p.core),
      ...(p.extended ? { extended: part(p.extended) } : {}),
    })),
  };
}
