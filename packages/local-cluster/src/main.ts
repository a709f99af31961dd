#!/usr/bin/env node
// npm run cluster -- <up|down|status|exec|logs|kubectl>: the local cluster's command line.
import { spawnSync } from 'node:child_process';
import { componentStatus, down, isHealthy, up, upLockPath } from './cluster.js';
import { ensureSimulatedNodes } from './kwok.js';
import { applyWorkload, startChurn } from './workload.js';
import { binPath, stateDir, statePaths } from './paths.js';

const USAGE = `usage: npm run cluster -- <command>
  up [--simulated-nodes N]               start (and on first use build) the local cluster; prints KUBECONFIG= and AUDIT_LOG=;
                                         with N: also N simulated nodes (kwok, built on first use) for big workloads
  workload --pods N [--pods-per-deployment P] [--no-policy] [--churn PODS_PER_S --for SECONDS]
                                         make the simulated nodes hold N pods in Deployments of P (default 10) with a
                                         Service, Server, AuthorizationPolicy and HTTPRoute each (docs/scale.md);
                                         --churn: then rolling updates at that many pods per second
  down                                   stop everything; leaves no process, network namespace, mount, cgroup or file
  status                                 show the components and whether the API answers
  exec <namespace>/<pod> [-c <container>] -- <command>   kubectl exec: run a command in a container
  logs <namespace>/<pod> [-c <container>] [-f]           kubectl logs: print (or follow) a container's output
  kubectl <args...>                      kubectl with the admin kubeconfig
Instance: MINIMESH_CLUSTER_NAME (default mm: namespace mm-node), MINIMESH_API_PORT (default 6443),
MINIMESH_CLUSTER_DIR (default /tmp/minimesh-cluster). Images: bash scripts/images.sh build.`;

const out = (s: string) => process.stdout.write(`${s}\n`);
const err = (s: string) => process.stderr.write(`${s}\n`);

function usage(message: string): never {
  err(`cluster: ${message}`);
  err(USAGE);
  process.exit(2);
}

/** kubectl with the admin kubeconfig; returns its exit code. */
function kubectl(kubeconfig: string, args: string[]): number {
  const r = spawnSync(binPath('kubectl'), ['--kubeconfig', kubeconfig, ...args], { stdio: 'inherit' });
  return r.status ?? 1;
}

function podRef(ref: string | undefined): { namespace: string; name: string } {
  const m = /^([a-z0-9-]+)\/([a-z0-9.-]+)$/.exec(ref ?? '');
  if (!m) usage(`pod ${ref ?? '(missing)'} is not valid: expected <namespace>/<pod>`);
  return { namespace: m[1]!, name: m[2]! };
}

/** up and down run under flock(1) on `<dir>.up.lock`, the lock ensureCluster() takes too. */
function relockedExitCode(argv: string[]): number | undefined {
  if (process.env.MINIMESH_UP_LOCKED === '1') return undefined;
  const r = spawnSync('flock', ['-o', upLockPath(), process.execPath, process.argv[1]!, ...argv], {
    stdio: 'inherit',
    env: { ...process.env, MINIMESH_UP_LOCKED: '1' },
  });
  return r.status ?? 1;
}

/** A whole number from an option's value, or the usage error that names the option. */
function wholeNumber(flag: string, value: string | undefined, min: number): number {
  const n = Number(value);
  if (value === undefined || !/^\d+$/.test(value) || n < min)
    usage(`${flag} ${value ?? '(missing)'} is not valid: expected a whole number of at least ${min}`);
  return n;
}

function simulatedNodesFlag(args: string[]): number {
  if (args[0] !== '--simulated-nodes' || args.length !== 2) usage(`up: unexpected ${args.join(' ')}`);
  return wholeNumber('--simulated-nodes', args[1], 0);
}

async function workload(args: string[]): Promise<number> {
  let pods: number | undefined;
  let perDeployment = 10;
  let policy = true;
  let churn: number | undefined;
  let seconds: number | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--pods') pods = wholeNumber(a, args[++i], 0);
    else if (a === '--pods-per-deployment') perDeployment = wholeNumber(a, args[++i], 1);
    else if (a === '--no-policy') policy = false;
    else if (a === '--churn') churn = wholeNumber(a, args[++i], 1);
    else if (a === '--for') seconds = wholeNumber(a, args[++i], 1);
    else usage(`workload: unknown option ${a}`);
  }
  if (pods === undefined) usage('workload needs --pods N');
  if ((churn === undefined) !== (seconds === undefined)) usage('workload: --churn and --for go together');
  const log = (m: string) => err(`[workload] ${m}`);
  const layout = await applyWorkload(
    { pods, podsPerDeployment: perDeployment, policyGroups: policy ? ['policy.minimesh.io'] : [] },
    { log },
  );
  if (churn !== undefined && seconds !== undefined) {
    log(`churn: ${churn} pods/s for ${seconds} s`);
    const c = startChurn(layout, { podsPerSecond: churn, log });
    await new Promise((r) => setTimeout(r, seconds * 1000));
    await c.stop();
    log(`churn: ${c.restarts} rolling update(s)`);
  }
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  const p = statePaths(stateDir());
  if (cmd === 'up' || cmd === 'down') {
    const code = relockedExitCode(argv);
    if (code !== undefined) return code;
  }
  switch (cmd) {
    case 'up': {
      const nodes = rest.length > 0 ? simulatedNodesFlag(rest) : undefined;
      const info = await up((m) => err(`[cluster] ${m}`));
      if (nodes !== undefined) await ensureSimulatedNodes({ nodes, log: (m) => err(`[cluster] ${m}`) });
      out(`KUBECONFIG=${info.kubeconfigPath}`);
      out(`AUDIT_LOG=${info.auditLogPath}`);
      return 0;
    }
    case 'workload':
      return await workload(rest);
    case 'down':
      await down((m) => err(`[cluster] ${m}`));
      err('[cluster] down: nothing left');
      return 0;
    case 'status': {
      for (const c of componentStatus())
        out(`${c.name.padEnd(24)} ${c.running ? `running (pid ${c.pid})` : 'stopped'}`);
      const healthy = await isHealthy();
      out(`api ${healthy ? 'ready' : 'not ready'} (${p.dir})`);
      return healthy ? 0 : 1;
    }
    case 'exec': {
      // kubectl exec -n <ns> <pod> [-c <container>] -- <command>
      const { namespace, name } = podRef(rest[0]);
      const sep = rest.indexOf('--');
      const flags = sep >= 0 ? rest.slice(1, sep) : [];
      const command = sep >= 0 ? rest.slice(sep + 1) : rest.slice(1);
      if (command.length === 0) usage('exec needs a command after --');
      return kubectl(p.adminKubeconfig, ['exec', '-n', namespace, name, ...flags, '--', ...command]);
    }
    case 'logs': {
      // kubectl logs -n <ns> <pod> [-c <container>] [-f] [--previous]...
      const { namespace, name } = podRef(rest[0]);
      return kubectl(p.adminKubeconfig, ['logs', '-n', namespace, name, ...rest.slice(1)]);
    }
    case 'kubectl': {
      const r = spawnSync(binPath('kubectl'), ['--kubeconfig', p.adminKubeconfig, ...rest], { stdio: 'inherit' });
      return r.status ?? 1;
    }
    case '--help':
    case '-h':
    case 'help':
      out(USAGE);
      return 0;
    case undefined:
      return usage('a command is required');
    default:
      return usage(`unknown command ${cmd}`);
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: Error) => {
    err(`cluster: ${e.message}`);
    process.exit(1);
  },
);
