// Faults and bad input: a node part that cannot start stops `up` with one line naming it and its log
// file; an image that was not built stops it before anything starts. Each case runs a second,
// throw-away instance (its own name, port, network namespace, state directory, cgroup root and mount
// namespace) beside the shared cluster, and takes it down again. Also: a kubelet that dies is
// restarted by ensureCluster() and adopts the running pods.
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  adminClient,
  COREDNS_IMAGE,
  createNamespace,
  ensureCluster,
  listImages,
  PAUSE_IMAGE,
  type KubeObject,
} from '../src/index.js';
import { cacheDir } from '../src/paths.js';
import { eventually, fixture, uniqueName } from './helpers.js';

const execFileP = promisify(execFile);
const main = resolve(import.meta.dirname, '..', 'dist', 'main.js');
const name = 'mmfault';
const netns = `${name}-node`;
let work: string;
let dir: string;
let port: number;
/** The instance's containerd root (content and snapshots; kept in the cache across `down` like the shared one's). */
const containerdRoot = join(cacheDir(), 'containerd', name);

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej).listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => res(p));
    });
  });
}

/** What the CLI printed in the current test: a CI run on a loaded machine is where a failure is read. */
const transcript: string[] = [];
afterEach((ctx) => {
  if (ctx.task.result?.state === 'fail') console.error(transcript.join('\n'));
  transcript.length = 0;
});

/** Runs the CLI for the throw-away instance; resolves with its exit code and output. */
function cluster(command: 'up' | 'down', images: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((res) => {
    const child = spawn(process.execPath, [main, command], {
      env: {
        ...process.env,
        MINIMESH_CLUSTER_NAME: name,
        MINIMESH_API_PORT: String(port),
        MINIMESH_CLUSTER_DIR: dir,
        MINIMESH_IMAGES_LIST: images,
        MINIMESH_UP_LOCKED: '',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => {
      transcript.push(`cluster ${command} (${name}): exit ${code}\n--- stdout\n${stdout}--- stderr\n${stderr}`);
      res({ code: code ?? -1, stdout, stderr });
    });
  });
}

/** An image list file: the real pause and CoreDNS tars, with `edit` applied. */
function imageList(file: string, edit: (lines: [string, string][]) => [string, string][]): string {
  const real = listImages().filter((i) => i.ref === PAUSE_IMAGE || i.ref === COREDNS_IMAGE);
  expect(real.map((i) => i.ref).sort()).toEqual([COREDNS_IMAGE, PAUSE_IMAGE].sort());
  const lines = edit(real.map((i) => [i.ref, i.tar]));
  const path = join(work, file);
  writeFileSync(path, lines.map((l) => l.join(' ')).join('\n') + '\n');
  return path;
}

/** The one line `up` printed for the failure (the CLI prefixes it with "cluster: "). */
function failureLine(stderr: string): string {
  const lines = stderr.split('\n').filter((l) => l.startsWith('cluster: '));
  expect(lines).toHaveLength(1);
  return lines[0]!.slice('cluster: '.length);
}

beforeAll(async () => {
  await ensureCluster();
  work = mkdtempSync(join(tmpdir(), 'mm-lc-faults-'));
  dir = join(work, 'state');
  port = await freePort();
});

afterAll(async () => {
  if (dir)
    await cluster(
      'down',
      imageList('down.list', (l) => l),
    );
  rmSync(work, { recursive: true, force: true });
  rmSync(containerdRoot, { recursive: true, force: true });
}, 120_000);

describe('up stops with one line naming the part that cannot start and its log file', () => {
  it('an image that was not built: before anything starts, naming the build command', async () => {
    const list = imageList('no-coredns.list', (l) => l.filter(([ref]) => ref !== COREDNS_IMAGE));
    const r = await cluster('up', list);
    expect(r.code).toBe(1);
    expect(failureLine(r.stderr)).toBe(
      `local cluster: image ${COREDNS_IMAGE} is not built: run bash scripts/images.sh build`,
    );
    expect(existsSync(join(dir, 'pids'))).toBe(false);
  });

  it('containerd (its socket path is taken by a directory)', async () => {
    // A state directory of this kind whose containerd socket path is a non-empty directory.
    mkdirSync(join(dir, 'containerd', 'containerd.sock', 'in-the-way'), { recursive: true });
    writeFileSync(join(dir, 'node-kind'), 'kubelet+containerd\n');
    const r = await cluster(
      'up',
      imageList('ok.list', (l) => l),
    );
    expect(r.code).toBe(1);
    const line = failureLine(r.stderr);
    expect(line).toMatch(/^local cluster: containerd exited: .+ \(log: .+\/logs\/containerd\.log\)$/);
    expect(line).toContain(join(dir, 'logs', 'containerd.log'));
    const down = await cluster(
      'down',
      imageList('ok.list', (l) => l),
    );
    expect(down.code).toBe(0);
    expect(existsSync(dir)).toBe(false);
  });

  it('kubelet (its port on the node IP is taken)', async () => {
    // The instance's node namespace, made beforehand with a listener on 10.23.0.1:10250.
    await execFileP('ip', ['netns', 'add', netns]);
    await execFileP('ip', ['-n', netns, 'link', 'add', 'mm0', 'type', 'bridge']);
    await execFileP('ip', ['-n', netns, 'addr', 'add', '10.23.0.1/16', 'dev', 'mm0']);
    await execFileP('ip', ['-n', netns, 'link', 'set', 'mm0', 'up']);
    const squatter = spawn(
      'nsenter',
      [
        `--net=/var/run/netns/${netns}`,
        '--',
        process.execPath,
        '-e',
        "require('node:net').createServer().listen(10250, '10.23.0.1', () => console.log('listening'))",
      ],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    try {
      await new Promise((r) => squatter.stdout.once('data', r));
      const r = await cluster(
        'up',
        imageList('ok.list', (l) => l),
      );
      expect(r.code).toBe(1);
      const line = failureLine(r.stderr);
      expect(line).toMatch(/^local cluster: kubelet exited: .+ \(log: .+\/logs\/kubelet\.log\)$/);
      expect(line).toContain('10250');
    } finally {
      squatter.kill('SIGKILL');
      expect(
        (
          await cluster(
            'down',
            imageList('ok.list', (l) => l),
          )
        ).code,
      ).toBe(0);
    }
  });

  it('CoreDNS (its image is missing from containerd: ErrImageNeverPull)', async () => {
    // The list claims CoreDNS is built, but its tar holds another image (and containerd has no copy left
    // from an earlier case).
    rmSync(containerdRoot, { recursive: true, force: true });
    const list = imageList('wrong-tar.list', (l) =>
      l.map(([ref, tar]) => [ref, ref === COREDNS_IMAGE ? l.find(([r]) => r === PAUSE_IMAGE)![1] : tar]),
    );
    const r = await cluster('up', list);
    expect(r.code).toBe(1);
    const line = failureLine(r.stderr);
    expect(line).toMatch(
      /^local cluster: CoreDNS cannot start: ErrImageNeverPull: .*registry\.k8s\.io\/coredns\/coredns:v1\.15\.0.* \(log: .+\/pod-logs\/kube-system_coredns-.+\/coredns\)$/,
    );
    expect((await cluster('down', list)).code).toBe(0);
  });
});

describe('a kubelet that dies', () => {
  it('is restarted by ensureCluster(), and the running pods keep their containers', async () => {
    const ns = uniqueName('lc-kubelet');
    await createNamespace(ns);
    await adminClient().request('POST', `/api/v1/namespaces/${ns}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'survivor' },
      spec: {
        containers: [
          {
            name: 'app',
            image: fixture('http-echo'),
            readinessProbe: { httpGet: { path: '/healthz', port: 8080 }, periodSeconds: 1 },
          },
        ],
      },
    });
    const ready = async () => {
      const x: KubeObject = await adminClient().request('GET', `/api/v1/namespaces/${ns}/pods/survivor`);
      return x.status?.conditions?.find((c: KubeObject) => c.type === 'Ready')?.status === 'True' ? x : undefined;
    };
    const before = await eventually('survivor Ready', ready);
    const info = await ensureCluster();
    const kubeletPid = Number(readFileSync(join(info.dir, 'pids', 'kubelet.pid'), 'utf8'));
    process.kill(kubeletPid, 'SIGKILL');
    await eventually('kubelet gone', () => !existsSync(`/proc/${kubeletPid}`));
    await ensureCluster();
    const newPid = Number(readFileSync(join(info.dir, 'pids', 'kubelet.pid'), 'utf8'));
    expect(newPid).not.toBe(kubeletPid);
    const after = await eventually('survivor Ready after the restart', ready, 30_000);
    expect(after.status.containerStatuses[0].containerID).toBe(before.status.containerStatuses[0].containerID);
    expect(after.status.containerStatuses[0].restartCount).toBe(0);
    await adminClient()
      .request('DELETE', `/api/v1/namespaces/${ns}`)
      .catch(() => undefined);
  });
});
