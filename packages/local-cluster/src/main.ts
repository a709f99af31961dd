#!/usr/bin/env node
// npm run cluster -- <up|down|status|exec|logs|kubectl>: the local cluster's command line.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { adminClient, componentStatus, down, isHealthy, up } from './cluster.js';
import { podNetnsName } from './forward.js';
import { binPath, stateDir, statePaths } from './paths.js';

const USAGE = `usage: npm run cluster -- <command>
  up                                     start (and on first use build) the local cluster; prints KUBECONFIG= and AUDIT_LOG=
  down                                   stop everything and remove every process, network namespace, mount and file
  status                                 show the components and whether the API answers
  exec <namespace>/<pod> -- <command>    run a command inside the pod's network namespace
  logs <namespace>/<pod> [-c <container>] [-f]  print (or follow) a container's output
  kubectl <args...>                      kubectl with the admin kubeconfig
State directory: MINIMESH_CLUSTER_DIR (default /tmp/minimesh-cluster).`;

const out = (s: string) => process.stdout.write(`${s}\n`);
const err = (s: string) => process.stderr.write(`${s}\n`);

function usage(message: string): never {
  err(`cluster: ${message}`);
  err(USAGE);
  process.exit(2);
}

function parsePodRef(ref: string | undefined): { namespace: string; name: string } {
  const m = /^([a-z0-9-]+)\/([a-z0-9.-]+)$/.exec(ref ?? '');
  if (!m) usage(`pod ${ref ?? '(missing)'} is not valid: expected <namespace>/<pod>`);
  return { namespace: m[1]!, name: m[2]! };
}

async function podUid(namespace: string, name: string): Promise<string> {
  const pod = await adminClient().get(`/api/v1/namespaces/${namespace}/pods/${name}`);
  if (!pod) {
    err(`cluster: pod ${namespace}/${name} not found`);
    process.exit(1);
  }
  return String(pod.metadata.uid);
}

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  const p = statePaths(stateDir());
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
      const { namespace, name } = parsePodRef(rest[0]);
      const sep = rest.indexOf('--');
      const command = sep >= 0 ? rest.slice(sep + 1) : rest.slice(1);
      if (command.length === 0) usage('exec needs a command after --');
      const uid = await podUid(namespace, name);
      const r = spawnSync('ip', ['netns', 'exec', podNetnsName(uid), ...command], { stdio: 'inherit' });
      return r.status ?? 1;
    }
    case 'logs': {
      const { namespace, name } = parsePodRef(rest[0]);
      const ci = rest.indexOf('-c');
      const uid = await podUid(namespace, name);
      const dir = join(p.pods, uid, 'logs');
      const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.log')) : [];
      let container = ci >= 0 ? rest[ci + 1] : undefined;
      if (!container) {
        if (files.length !== 1)
          usage(
            `pod ${namespace}/${name} has containers ${files.map((f) => f.slice(0, -4)).join(', ') || '(none started)'}: choose one with -c`,
          );
        container = files[0]!.slice(0, -4);
      }
      const file = join(dir, `${container}.log`);
      if (!existsSync(file)) {
        err(`cluster: no logs for container ${container} of ${namespace}/${name}`);
        return 1;
      }
      if (rest.includes('-f') || rest.includes('--follow')) {
        return spawnSync('tail', ['-n', '+1', '-f', file], { stdio: 'inherit' }).status ?? 0;
      }
      process.stdout.write(readFileSync(file));
      return 0;
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
    default:
      return usage(cmd ? `unknown command ${cmd}` : 'a command is required');
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: Error) => {
    err(`cluster: ${e.message}`);
    process.exit(1);
  },
);
