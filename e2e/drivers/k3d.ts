// The k3d driver: the Linkerd tutorial's k3d cluster (k3d/cluster.yaml) made by `npm run k3d -- up`, which also built
// and imported the images. kubectl and helm use the k3d-<cluster> context; the audit log is read from
// the server node's container, as the Linkerd tutorial does.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MINIMESH_VERSION } from '@minimesh/config';
import { ensureHelm, run, type RunResult } from '../src/tools.js';
import type { AuditEvent, Driver } from './types.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function createK3dDriver(): Driver {
  const clusterName = process.env.MINIMESH_K3D_CLUSTER ?? 'cluster';
  const context = process.env.MINIMESH_K3D_CONTEXT ?? `k3d-${clusterName}`;
  const kubectlBin = process.env.KUBECTL ?? 'kubectl';
  const helmBin = (): string => process.env.HELM ?? ensureHelm();
  const kubectl = (args: readonly string[], input?: string): Promise<RunResult> =>
    run(kubectlBin, ['--context', context, ...args], input === undefined ? {} : { input });
  const version = process.env.MINIMESH_VERSION ?? MINIMESH_VERSION;

  /** Runs a command in an ephemeral debug container that shares the pod's network namespace. */
  async function debug(namespace: string, pod: string, command: readonly string[]): Promise<RunResult> {
    const name = `mm-debug-${randomBytes(3).toString('hex')}`;
    const started = await kubectl([
      'debug',
      '-n',
      namespace,
      pod,
      `--container=${name}`,
      '--profile=netadmin',
      '--quiet',
      `--image=ghcr.io/minimesh/proxy-init:${version}`,
      '--image-pull-policy=IfNotPresent',
      '--',
      ...command,
    ]);
    if (started.code !== 0) return started;
    for (let i = 0; i < 60; i++) {
      const st = await kubectl([
        'get',
        'pod',
        '-n',
        namespace,
        pod,
        '-o',
        `jsonpath={.status.ephemeralContainerStatuses[?(@.name=="${name}")].state.terminated.exitCode}`,
      ]);
      if (st.stdout.trim() !== '') {
        const logs = await kubectl(['logs', '-n', namespace, pod, '-c', name]);
        return { code: Number(st.stdout.trim()), stdout: logs.stdout, stderr: logs.stderr };
      }
      await sleep(1000);
    }
    return { code: 1, stdout: '', stderr: `debug container ${name} in ${namespace}/${pod} did not finish in 60s` };
  }

  return {
    name: 'k3d',
    async setup() {
      const r = await kubectl(['version', '-o', 'json']);
      if (r.code !== 0)
        throw new Error(
          `k3d driver: the cluster (context ${context}) does not answer: run \`npm run k3d -- up\` first (${r.stderr.trim()})`,
        );
      return `k3d cluster ${clusterName} (context ${context})`;
    },
    kubeArgs: () => ['--context', context],
    kubectl,
    helm: (args) => run(helmBin(), [...args, '--kube-context', context], { timeoutMs: 600_000 }),
    fixtureImage: (name) => `minimesh.test/${name}:e2e`,
    execInPod: (namespace, pod, command) => debug(namespace, pod, command),
    async natRules(namespace, pod) {
      const out: string[] = [];
      for (const bin of ['iptables-nft-save', 'iptables-legacy-save']) {
        const r = await debug(namespace, pod, [bin, '-t', 'nat']);
        if (r.code === 0) out.push(r.stdout);
      }
      return out.join('\n');
    },
    async logs(namespace, pod, container) {
      const r = await kubectl(['logs', '-n', namespace, pod, '-c', container]);
      return r.code === 0 ? r.stdout : '';
    },
    async auditEvents() {
      const r = await run('docker', [
        'exec',
        `k3d-${clusterName}-server-0`,
        'cat',
        '/var/log/kubernetes/audit/audit.log',
      ]);
      if (r.code !== 0) throw new Error(`k3d driver: cannot read the audit log: ${r.stderr.trim()}`);
      const events: AuditEvent[] = [];
      for (const line of r.stdout.split('\n')) {
        if (!line.trim()) continue;
        try {
          events.push(JSON.parse(line) as AuditEvent);
        } catch {
          /* a line being written */
        }
      }
      return events;
    },
    async killPodProcesses(namespace, pod) {
      const node = `k3d-${clusterName}-server-0`;
      const crictl = (args: string[]) => run('docker', ['exec', node, 'crictl', ...args]);
      const sandbox = (
        await crictl(['pods', '-q', '--name', pod, '--namespace', namespace, '--state', 'ready'])
      ).stdout.trim();
      if (!sandbox) throw new Error(`kill ${namespace}/${pod}: no ready sandbox on ${node}`);
      const ids = (await crictl(['ps', '-q', '--pod', sandbox])).stdout.split('\n').filter(Boolean);
      // StopContainer with a timeout of 0 sends SIGKILL at once.
      const r = await crictl(['stop', '--timeout', '0', ...ids]);
      if (r.code !== 0) throw new Error(`kill ${namespace}/${pod}: crictl stop: ${r.stderr.trim()}`);
      return `crictl stop --timeout 0 (SIGKILL) of ${ids.length} container(s) of ${namespace}/${pod}`;
    },
    async outsideHost(tag, app) {
      // A container of the fixture image (it has Node) at 203.0.113.10 on a Docker network of its own,
      // which the server node joins at 203.0.113.1: the node routes the pods' traffic to it directly.
      const node = `k3d-${clusterName}-server-0`;
      const name = `mm-outside-${tag}`;
      const docker = async (args: string[]) => {
        const r = await run('docker', args);
        if (r.code !== 0) throw new Error(`outside host: docker ${args.slice(0, 2).join(' ')}: ${r.stderr.trim()}`);
        return r.stdout;
      };
      const remove = async () => {
        await run('docker', ['rm', '-f', name]);
        await run('docker', ['network', 'disconnect', '-f', name, node]);
        await run('docker', ['network', 'rm', name]);
      };
      try {
        await docker(['network', 'create', '--subnet', '203.0.113.0/24', '--gateway', '203.0.113.254', name]);
        await docker(['network', 'connect', '--ip', '203.0.113.1', name, node]);
        const dir = mkdtempSync(join(tmpdir(), 'mm-outside-'));
        writeFileSync(join(dir, 'app.cjs'), app);
        await docker([
          'run',
          '-d',
          '--name',
          name,
          '--network',
          name,
          '--ip',
          '203.0.113.10',
          '-v',
          `${dir}:/outside:ro`,
          '--entrypoint',
          'node',
          'minimesh.test/http-client:e2e',
          '/outside/app.cjs',
        ]);
        for (let i = 0; !(await run('docker', ['logs', name])).stdout.includes('listening'); i++) {
          if (i > 100) throw new Error(`outside host: ${name} did not print "listening" within 10 s`);
          await sleep(100);
        }
      } catch (err) {
        await remove();
        throw err;
      }
      return { ip: '203.0.113.10', log: async () => (await run('docker', ['logs', name])).stdout, remove };
    },
    async restartApiServer() {
      // k3s runs the API server in its one process: restart the server node's container (pods keep
      // running in containerd's shims).
      const t0 = Date.now();
      const r = await run('docker', ['restart', `k3d-${clusterName}-server-0`], { timeoutMs: 120_000 });
      if (r.code !== 0) throw new Error(`docker restart: ${r.stderr.trim()}`);
      for (;;) {
        const ready = await kubectl(['get', '--raw', '/readyz']);
        if (ready.code === 0 && ready.stdout.trim() === 'ok') break;
        if (Date.now() - t0 > 180_000) throw new Error('restartApiServer: /readyz not ok 180 s after docker restart');
        await sleep(500);
      }
      return `k3d server node restarted, /readyz ok ${Date.now() - t0} ms later`;
    },
    kubeconfigHint: () => `kubectl config use-context ${context}`,
  };
}
