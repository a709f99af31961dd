import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KubeApiError, type KubeClient } from '@minimesh/kube';
import {
  cniRecordNatSource,
  debugContainerNatSource,
  debugScript,
  execNatSource,
  kubeDebugContainerApi,
  kubectlDebugHint,
  parseDebugOutput,
  type DebugContainerApi,
  type ExecInPod,
} from './nat-source.js';

function fakeExec(answers: Record<string, { code: number; stdout?: string; stderr?: string }>): {
  exec: ExecInPod;
  calls: string[];
} {
  const calls: string[] = [];
  const exec: ExecInPod = async (ns, pod, argv) => {
    calls.push(`${ns}/${pod}: ${argv.join(' ')}`);
    const a = answers[argv[0] as string] ?? { code: 127, stderr: `${argv[0]}: not found` };
    return { code: a.code, stdout: a.stdout ?? '', stderr: a.stderr ?? '' };
  };
  return { exec, calls };
}

describe('execNatSource', () => {
  it('prefers the backend whose table shows proxy-init chains (nft mode)', async () => {
    const { exec, calls } = fakeExec({
      'iptables-legacy-save': { code: 0, stdout: '*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n' },
      'iptables-nft-save': { code: 0, stdout: '*nat\n:PROXY_INIT_OUTPUT - [0:0]\nCOMMIT\n' },
    });
    expect(await execNatSource(exec, 'test').read('shop', 'web')).toContain('PROXY_INIT_OUTPUT');
    expect(calls).toEqual(['shop/web: iptables-legacy-save -t nat', 'shop/web: iptables-nft-save -t nat']);
  });
  it('falls back to the first table that could be read', async () => {
    const { exec } = fakeExec({ 'iptables-nft-save': { code: 0, stdout: '*nat\nCOMMIT\n' } });
    expect(await execNatSource(exec, 'test').read('shop', 'web')).toBe('*nat\nCOMMIT\n');
  });
  it('names every failure when nothing could be read', async () => {
    const { exec } = fakeExec({});
    await expect(execNatSource(exec, 'test').read('shop', 'web')).rejects.toThrow(
      /cannot read the nat table of shop\/web: iptables-legacy-save: exit 127 \(iptables-legacy-save: not found\); iptables-nft-save/,
    );
  });
  it('reads ip6tables for IPv6', async () => {
    const { exec, calls } = fakeExec({
      'ip6tables-legacy-save': { code: 0, stdout: '*nat\n:PROXY_INIT_OUTPUT - [0:0]\nCOMMIT\n' },
    });
    await execNatSource(exec, 'test').read('shop', 'web', 6);
    expect(calls).toEqual(['shop/web: ip6tables-legacy-save -t nat']);
  });
  it("prints the Linkerd tutorial's kubectl debug way in", () => {
    expect(kubectlDebugHint('shop', 'web-1', 'minimesh-proxy')).toMatch(
      /^kubectl debug -n shop web-1 -i --quiet --image=ubuntu:22\.04 --target=minimesh-proxy --profile=netadmin -- .*iptables-legacy-save -t nat' > web-1\.nat$/,
    );
  });
});

/** What a debug container running debugScript(4) prints, for the given outputs per binary. */
function debugLog(parts: [string, number, string][]): string {
  return parts
    .map(([bin, code, text]) => `### minimesh-explain ${bin}\n${text}### minimesh-explain exit ${code}\n`)
    .join('');
}

describe('debugScript and parseDebugOutput', () => {
  it('runs every save binary of the family with node alone (no shell in the image), each fenced with its exit code', () => {
    // Stand-ins for the save binaries on PATH: one prints a table, one fails, the third is missing.
    const dir = mkdtempSync(join(tmpdir(), 'mm-debug-script-'));
    try {
      const bin = (name: string, body: string) => {
        writeFileSync(join(dir, name), `#!/bin/sh\n${body}\n`);
        chmodSync(join(dir, name), 0o755);
      };
      bin('iptables-legacy-save', 'echo "*nat"; echo "args: $*"; echo COMMIT');
      bin('iptables-nft-save', 'echo "iptables-nft-save: Permission denied" >&2; exit 4');
      const r = spawnSync(process.execPath, ['-e', debugScript(4)], {
        encoding: 'utf8',
        env: { PATH: dir },
      });
      expect(r.status, r.stderr).toBe(0);
      const out = parseDebugOutput(r.stdout);
      expect([...out.keys()]).toEqual(['iptables-legacy-save', 'iptables-nft-save', 'iptables-save']);
      expect(out.get('iptables-legacy-save')).toEqual({ code: 0, stdout: '*nat\nargs: -t nat\nCOMMIT\n', stderr: '' });
      expect(out.get('iptables-nft-save')).toEqual({
        code: 4,
        stdout: '',
        stderr: 'iptables-nft-save: Permission denied\n',
      });
      expect(out.get('iptables-save')).toMatchObject({ code: 127, stderr: expect.stringContaining('ENOENT') });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(debugScript(6)).toContain('"ip6tables-legacy-save","ip6tables-nft-save","ip6tables-save"');
  });
  it('splits the log back into one result per binary', () => {
    const out = parseDebugOutput(
      debugLog([
        ['iptables-legacy-save', 0, '*nat\nCOMMIT\n'],
        ['iptables-nft-save', 1, 'iptables-nft-save: Permission denied\n'],
      ]),
    );
    expect(out.get('iptables-legacy-save')).toEqual({ code: 0, stdout: '*nat\nCOMMIT\n', stderr: '' });
    expect(out.get('iptables-nft-save')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'iptables-nft-save: Permission denied\n',
    });
  });
});

describe('debugContainerNatSource', () => {
  function fakeApi(opts: { phase?: string; log: string; conflicts?: number; waiting?: string }) {
    const calls: string[] = [];
    let added: Record<string, unknown> | undefined;
    let conflicts = opts.conflicts ?? 0;
    const api: DebugContainerApi = {
      async readNamespacedPod() {
        return {
          metadata: { resourceVersion: '1' },
          spec: {
            initContainers: [
              { name: 'minimesh-init', image: 'ghcr.io/minimesh/proxy-init:9.9.9', imagePullPolicy: 'Never' },
            ],
          },
          status: {
            phase: opts.phase ?? 'Running',
            ephemeralContainerStatuses: added
              ? [
                  {
                    name: String(added.name),
                    state: opts.waiting ? { waiting: { reason: opts.waiting } } : { terminated: { exitCode: 0 } },
                  },
                ]
              : [],
          },
        };
      },
      async replaceNamespacedPodEphemeralcontainers({ body }) {
        if (conflicts-- > 0)
          throw new KubeApiError('PUT', '/api/v1/namespaces/shop/pods/web/ephemeralcontainers', 409, 'conflict');
        added = body.spec?.ephemeralContainers?.at(-1);
        calls.push(`add ${JSON.stringify(added)}`);
        return body;
      },
      async readNamespacedPodLog({ container }) {
        calls.push(`log ${container}`);
        return opts.log;
      },
    };
    return { api, calls };
  }

  it("adds one netadmin container with the pod's proxy-init image and returns proxy-init's table", async () => {
    const { api, calls } = fakeApi({
      conflicts: 1,
      log: debugLog([
        ['iptables-legacy-save', 0, '*nat\nCOMMIT\n'],
        ['iptables-nft-save', 0, '*nat\n:PROXY_INIT_OUTPUT - [0:0]\nCOMMIT\n'],
        ['iptables-save', 0, '*nat\nCOMMIT\n'],
      ]),
    });
    const text = await debugContainerNatSource(api, { fallbackImage: 'x', pollMs: 1 }).read('shop', 'web');
    expect(text).toContain('PROXY_INIT_OUTPUT');
    expect(calls).toHaveLength(2);
    const added = JSON.parse(calls[0]!.slice(4)) as Record<string, unknown>;
    expect(added).toMatchObject({
      image: 'ghcr.io/minimesh/proxy-init:9.9.9',
      command: ['node', '-e', debugScript(4)],
      imagePullPolicy: 'Never',
      securityContext: { capabilities: { add: ['NET_ADMIN', 'NET_RAW'] } },
    });
    expect(String(added.name)).toMatch(/^minimesh-explain-[0-9a-f]{6}$/);
    expect(calls[1]).toBe(`log ${added.name}`);
  });
  it('refuses a pod that has finished, and names a debug container that cannot start', async () => {
    await expect(
      debugContainerNatSource(fakeApi({ phase: 'Succeeded', log: '' }).api, { fallbackImage: 'x' }).read('shop', 'web'),
    ).rejects.toThrow('cannot read the nat table of shop/web: the pod is Succeeded');
    await expect(
      debugContainerNatSource(fakeApi({ log: '', waiting: 'ErrImageNeverPull' }).api, {
        fallbackImage: 'x',
        pollMs: 1,
      }).read('shop', 'web'),
    ).rejects.toThrow(
      /debug container minimesh-explain-\w+ \(image ghcr.io\/minimesh\/proxy-init:9.9.9\): ErrImageNeverPull/,
    );
  });
});

describe('kubeDebugContainerApi', () => {
  it('maps the three calls onto API paths; the log asks for JSON or anything (the API server refuses text/plain alone)', async () => {
    const calls: string[] = [];
    const client = {
      async requestOk(method: string, path: string, body?: unknown, opts?: { accept?: string }) {
        calls.push(`${method} ${path}${body ? ' +body' : ''}${opts?.accept ? ` accept=${opts.accept}` : ''}`);
        return method === 'GET' && path.includes('/log?') ? '*nat\nCOMMIT\n' : {};
      },
    } as unknown as KubeClient;
    const api = kubeDebugContainerApi(client);
    await api.readNamespacedPod({ name: 'web', namespace: 'shop' });
    await api.replaceNamespacedPodEphemeralcontainers({ name: 'web', namespace: 'shop', body: {} });
    expect(await api.readNamespacedPodLog({ name: 'web', namespace: 'shop', container: 'minimesh-explain-1' })).toBe(
      '*nat\nCOMMIT\n',
    );
    expect(calls).toEqual([
      'GET /api/v1/namespaces/shop/pods/web',
      'PUT /api/v1/namespaces/shop/pods/web/ephemeralcontainers +body',
      'GET /api/v1/namespaces/shop/pods/web/log?container=minimesh-explain-1 accept=application/json, */*',
    ]);
  });
});

describe('cniRecordNatSource', () => {
  const saved = '*nat\n:PROXY_INIT_OUTPUT - [0:0]\nCOMMIT\n';
  const record = (uid: string, appliedAt: string) => ({
    namespace: 'shop',
    name: 'web',
    uid,
    node: 'node-a',
    appliedAt,
    mode: 'nft',
    saved: { '4': `${saved}# ${uid} ${appliedAt}` },
  });
  function client(items: unknown[], installers = ['minimesh-cni-x']) {
    const paths: string[] = [];
    return {
      paths,
      client: {
        async requestOk(_m: string, path: string) {
          paths.push(path);
          if (path.includes('/proxy/pods?')) return { items };
          return { items: installers.map((name) => ({ metadata: { name } })) };
        },
      } as unknown as KubeClient,
    };
  }

  it("reads the newest record of this pod's uid from the installer on its node, through the API server", async () => {
    const c = client([
      record('u-1', '2026-11-28T05:00:00Z'),
      record('u-1', '2026-11-28T05:01:00Z'),
      record('u-0', '2026-11-28T05:02:00Z'),
    ]);
    const src = cniRecordNatSource(c.client, { controlPlaneNamespace: 'minimesh', node: 'node-a', uid: 'u-1' });
    expect(await src.read('shop', 'web')).toContain('# u-1 2026-11-28T05:01:00Z');
    expect(c.paths).toEqual([
      '/api/v1/namespaces/minimesh/pods?labelSelector=minimesh.io%2Fcontrol-plane-component%3Dcni&fieldSelector=spec.nodeName%3Dnode-a',
      '/api/v1/namespaces/minimesh/pods/minimesh-cni-x:9997/proxy/pods?namespace=shop&name=web',
    ]);
    expect(src.describe).toBe(
      "minimesh-cni's record on node node-a (installer minimesh-cni-x): the table it read back right after writing the rules at 2026-11-28T05:01:00Z, iptables mode nft",
    );
  });

  it('says what is missing: no installer on the node, no record, no IPv6 rules', async () => {
    await expect(
      cniRecordNatSource(client([], []).client, { controlPlaneNamespace: 'minimesh', node: 'node-a', uid: 'u-1' }).read(
        'shop',
        'web',
      ),
    ).rejects.toThrow('no minimesh-cni installer runs on node node-a (kubectl -n minimesh get daemonset minimesh-cni)');
    await expect(
      cniRecordNatSource(client([]).client, { controlPlaneNamespace: 'minimesh', node: 'node-a', uid: 'u-1' }).read(
        'shop',
        'web',
      ),
    ).rejects.toThrow('has no record of it: the plugin did not write its rules');
    await expect(
      cniRecordNatSource(client([record('u-1', 'x')]).client, {
        controlPlaneNamespace: 'minimesh',
        node: 'node-a',
        uid: 'u-1',
      }).read('shop', 'web', 6),
    ).rejects.toThrow("minimesh-cni wrote no IPv6 rules for it (proxy-init's --ipv6 was off)");
  });
});
