// The control-plane programs the scale bench measures, started as processes outside the cluster against
// the local cluster's API server (as bench/destination and bench/identity start them): minimesh's shipped
// bundles (packages/<p>/bundle/main.mjs), and Linkerd's controllers when their binaries are given:
//   BENCH_LINKERD_CONTROLLER  Linkerd's Go controller (linkerd2's controller/cmd: destination, identity)
//   BENCH_LINKERD_POLICY      Linkerd's policy controller (linkerd2's policy-controller, Rust)
// Built outside this repository from Linkerd's public source, never kept here (bench/scale/README.md).
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, procStat } from '../lib/proc.js';
import { stopProcess } from '../lib/report.js';

export { apiServerPid, freePort, procStat } from '../lib/proc.js';

export type Component = 'destination' | 'policy' | 'identity';
export type SubjectName = 'minimesh' | 'linkerd';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const now = (): number => performance.timeOrigin + performance.now();

export interface Started {
  component: Component;
  child: ChildProcess;
  pid: number;
  grpcPort: number;
  adminPort: number;
  /** spawn → the admin /ready answered 200 */
  readyMs: number;
  stop(): Promise<string>;
}

export interface StartContext {
  /** Kubeconfig the program uses (the admin's: Linkerd's RBAC is not ours to write, so both run as admin). */
  kubeconfig: string;
  /** The control plane's namespace (Leases, events). */
  controllerNamespace: string;
  /** Issuer certificate and key (PEM) and the trust anchors (PEM) for identity. */
  issuerCrt: string;
  issuerKey: string;
  trustAnchors: string;
  /** Scratch directory for files a program needs. */
  dir: string;
  /** A name for leader-election holders. */
  podName: string;
}

/** The shipped bundle (npm run bench makes it), else the build's dist/main.js (the e2e spec after a build). */
function bundle(program: string): string {
  const b = join(repo, 'packages', program, 'bundle', 'main.mjs');
  if (existsSync(b)) return b;
  const d = join(repo, 'packages', program, 'dist', 'main.js');
  if (existsSync(d)) return d;
  throw new Error(`${b} is missing: run node scripts/bundle.mjs ${program} (npm run bench does), or npm run build`);
}

/** Where Linkerd's identity reads its trust anchors: a fixed path in its container (k8s.MountPathTrustRootsPEM). */
export const LINKERD_TRUST_ROOTS = '/var/run/linkerd/identity/trust-roots/ca-bundle.crt';

export interface Subject {
  name: SubjectName;
  /** What runs, for the report. */
  describe(c: Component): string | undefined;
  has(c: Component): boolean;
  /** The audience of the service-account tokens its identity accepts. */
  tokenAudience: string;
  start(c: Component, ctx: StartContext): Promise<Started>;
}

async function waitReady(
  child: ChildProcess,
  url: string,
  t0: number,
  what: string,
  timeoutMs = 600_000,
): Promise<number> {
  for (;;) {
    const ok = await fetch(url).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return now() - t0;
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`${what} exited (${child.exitCode ?? child.signalCode}) before it was ready`);
    if (now() - t0 > timeoutMs) throw new Error(`${what} not ready within ${timeoutMs / 1000} s`);
    await sleep(10);
  }
}

async function launch(
  component: Component,
  file: string,
  args: (grpc: number, admin: number) => string[],
  env: Record<string, string>,
  readyPath: string,
  what: string,
): Promise<Started> {
  // A free port is free when asked, not when the program binds it: the Go clients' and the other
  // programs' outgoing connections take ephemeral ports too, and one of them can land on it first
  // (EADDRINUSE, the program exits). Such an exit before ready is retried on other ports, twice.
  for (let attempt = 1; ; attempt++) {
    const [grpcPort, adminPort] = [await freePort(), await freePort()];
    const t0 = now();
    const child = spawn(file, args(grpcPort, adminPort), {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, ...env },
    });
    const ready = await waitReady(child, `http://127.0.0.1:${adminPort}${readyPath}`, t0, what).then(
      (ms) => ({ ms }),
      (err: Error) => {
        child.kill('SIGKILL');
        return { err };
      },
    );
    if ('err' in ready) {
      const exited = /exited .* before it was ready/.test(ready.err.message);
      if (!exited || attempt === 3) throw ready.err;
      console.error(`${what} exited before it was ready (attempt ${attempt} of 3); starting it again on other ports`);
      continue;
    }
    return started(component, child, grpcPort, adminPort, ready.ms);
  }
}

function started(
  component: Component,
  child: ChildProcess,
  grpcPort: number,
  adminPort: number,
  readyMs: number,
): Started {
  return {
    component,
    child,
    pid: child.pid as number,
    grpcPort,
    adminPort,
    readyMs,
    stop: () => stopProcess(child, 20_000),
  };
}

export const minimesh: Subject = {
  name: 'minimesh',
  // with a hash of the file: a run names exactly the code it measured, whatever HEAD says
  describe: (c) =>
    `${bundle(c).replace(`${repo}/`, '')} (sha256 ${createHash('sha256')
      .update(readFileSync(bundle(c)))
      .digest('hex')
      .slice(0, 12)})`,
  has: () => true,
  tokenAudience: 'identity.minimesh.io',
  async start(c, ctx) {
    const common = (grpc: number, admin: number) => [
      '--addr',
      `127.0.0.1:${grpc}`,
      '--admin-addr',
      `127.0.0.1:${admin}`,
      '--kubeconfig',
      ctx.kubeconfig,
      '--controller-namespace',
      ctx.controllerNamespace,
      '--log-level',
      'warn',
      '--log-format',
      'json',
    ];
    const node = process.execPath;
    switch (c) {
      case 'destination':
        return await launch(
          c,
          node,
          // every simulated proxy connects from 127.0.0.1; in a cluster each has its own pod IP, so the
          // per-client stream limit (1,000 by default) would be hit by the bench, not by a proxy
          (g, a) => [bundle('destination'), ...common(g, a), '--max-streams-per-client', '1000000'],
          { POD_NAME: ctx.podName },
          '/ready',
          'minimesh-destination',
        );
      case 'policy':
        return await launch(
          c,
          node,
          (g, a) => [bundle('policy'), ...common(g, a)],
          { POD_NAME: ctx.podName },
          '/ready',
          'minimesh-policy',
        );
      case 'identity': {
        const issuer = join(ctx.dir, 'minimesh-issuer');
        mkdirSync(issuer, { recursive: true });
        writeFileSync(join(issuer, 'crt.pem'), readFileSync(ctx.issuerCrt));
        writeFileSync(join(issuer, 'key.pem'), readFileSync(ctx.issuerKey));
        return await launch(
          c,
          node,
          (g, a) => [bundle('identity'), ...common(g, a), '--issuer-dir', issuer, '--trust-anchors', ctx.trustAnchors],
          {},
          '/ready',
          'minimesh-identity',
        );
      }
    }
  },
};

export function linkerd(controller: string | undefined, policy: string | undefined): Subject | undefined {
  if (!controller && !policy) return undefined;
  for (const [env, file] of [
    ['BENCH_LINKERD_CONTROLLER', controller],
    ['BENCH_LINKERD_POLICY', policy],
  ] as const)
    if (file && !existsSync(file)) throw new Error(`${env}=${file}: no such file`);
  const has = (c: Component) => (c === 'policy' ? Boolean(policy) : Boolean(controller));
  return {
    name: 'linkerd',
    describe: (c) => (has(c) ? (c === 'policy' ? policy : controller) : undefined),
    has,
    tokenAudience: 'identity.l5d.io',
    async start(c, ctx) {
      if (!has(c)) throw new Error(`Linkerd's ${c} was not given`);
      const env = { HOSTNAME: ctx.podName };
      switch (c) {
        case 'destination':
          return await launch(
            c,
            controller!,
            (g, a) => [
              'destination',
              `-addr=127.0.0.1:${g}`,
              `-metrics-addr=127.0.0.1:${a}`,
              `-kubeconfig=${ctx.kubeconfig}`,
              `-controller-namespace=${ctx.controllerNamespace}`,
              '-cluster-domain=cluster.local',
              '-identity-trust-domain=cluster.local',
              '-log-level=warn',
            ],
            env,
            '/ready',
            "Linkerd's destination",
          );
        case 'identity': {
          const issuer = join(ctx.dir, 'linkerd-issuer');
          mkdirSync(issuer, { recursive: true });
          writeFileSync(join(issuer, 'crt.pem'), readFileSync(ctx.issuerCrt));
          writeFileSync(join(issuer, 'key.pem'), readFileSync(ctx.issuerKey));
          mkdirSync(dirname(LINKERD_TRUST_ROOTS), { recursive: true });
          writeFileSync(LINKERD_TRUST_ROOTS, readFileSync(ctx.trustAnchors));
          return await launch(
            c,
            controller!,
            (g, a) => [
              'identity',
              `-addr=127.0.0.1:${g}`,
              `-admin-addr=127.0.0.1:${a}`,
              `-kubeconfig=${ctx.kubeconfig}`,
              `-controller-namespace=${ctx.controllerNamespace}`,
              '-identity-scheme=linkerd.io/tls',
              '-identity-trust-domain=cluster.local',
              '-identity-issuance-lifetime=24h0m0s',
              '-identity-clock-skew-allowance=20s',
              `-issuer=${issuer}`,
              '-log-level=warn',
            ],
            env,
            '/ready',
            "Linkerd's identity",
          );
        }
        case 'policy':
          return await launch(
            c,
            policy!,
            (g, a) => [
              `--admin-addr=127.0.0.1:${a}`,
              `--grpc-addr=127.0.0.1:${g}`,
              // its admission webhook (kubert's server, which needs TLS files): not measured here
              '--admission-controller-disabled',
              `--kubeconfig=${ctx.kubeconfig}`,
              '--cluster-domain=cluster.local',
              '--identity-domain=cluster.local',
              `--control-plane-namespace=${ctx.controllerNamespace}`,
              '--default-policy=all-unauthenticated',
              '--default-opaque-ports=25,587,3306,4444,5432,6379,9300,11211',
              '--log-level=warn',
            ],
            env,
            '/ready',
            "Linkerd's policy controller",
          );
      }
    },
  };
}

/** Samples a process's RSS every intervalMs; stop() returns the peak. */
export function rssPeak(pid: number, intervalMs = 200): { stop(): number } {
  let peak = procStat(pid).rssMb;
  const t = setInterval(() => {
    const r = procStat(pid).rssMb;
    if (r > peak) peak = r;
  }, intervalMs);
  return {
    stop() {
      clearInterval(t);
      return peak;
    },
  };
}
