#!/usr/bin/env node
// npm run cluster -- <up|down|status|exec|logs|kubectl>: the local cluster's command line.
import { spawnSync } from 'node:child_process';
import { componentStatus, down, isHealthy, up, upLockPath } from './cluster.js';
import { binPath, stateDir, statePaths } from './paths.js';

const USAGE = `usage: npm run cluster -- <command>
  up                                     start (and on first use build) the local cluster; prints KUBECONFIG= and AUDIT_LOG=
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

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  const p = statePaths(stateDir());
  if (cmd === 'up' || cmd === 'down') {
    const code = relockedExitCode(argv);
    if (code !== undefined) return code;
  }
  switch (cmd) {
    case 'up': {
      const info = await up((m) => err(`[cluster] ${m}`));
      out(`KUBECONFIG=${info.kubeconfigPath}`);
      out(`AUDIT_LOG=${info.auditLogPath}`);
      return 0;
    }
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
