// Pods on the real node: a fixture pod behind a Service is Running and Ready with an IP from the CNI
// bridge, listed by the real endpointslice controller, reachable from another pod by pod IP, by
// ClusterIP (kube-proxy) and by name (CoreDNS); init containers, volumes, env, runAsUser, in-cluster
// API access; an image that was not built; a pod for another scheduler; deletion.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminClient,
  createNamespace,
  ensureCluster,
  execInPod,
  forwardToNode,
  podSandboxPid,
  type KubeObject,
} from '../src/index.js';
import { eventually, fixture, nodeScript, uniqueName } from './helpers.js';

const ns = uniqueName('lc-pods');
const admin = () => adminClient();
const kubectl = (...args: string[]) =>
  execFileSync('bash', ['../../scripts/cluster.sh', 'kubectl', ...args], { encoding: 'utf8' });

function pod(name: string, spec: KubeObject, labels: Record<string, string> = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns, labels }, spec };
}

async function runningPod(name: string): Promise<KubeObject> {
  return eventually(`pod ${name} Running and Ready`, async () => {
    const p = await admin().request('GET', `/api/v1/namespaces/${ns}/pods/${name}`);
    const ready = p.status?.conditions?.find((c: { type: string }) => c.type === 'Ready')?.status === 'True';
    return p.status?.phase === 'Running' && ready && p.status.podIP ? p : undefined;
  });
}

async function finishedPod(name: string): Promise<KubeObject> {
  return eventually(`pod ${name} finished`, async () => {
    const x = await admin().request('GET', `/api/v1/namespaces/${ns}/pods/${name}`);
    return ['Succeeded', 'Failed'].includes(x.status?.phase) ? x : undefined;
  });
}

beforeAll(async () => {
  await ensureCluster();
  await createNamespace(ns);
});

afterAll(async () => {
  await admin()
    .request('DELETE', `/api/v1/namespaces/${ns}`)
    .catch(() => undefined);
});

describe('pods on the real node', () => {
  it('runs a fixture pod behind a Service: containerd container, pod IP, EndpointSlice, reachable by IP, ClusterIP and name', async () => {
    await admin().request(
      'POST',
      `/api/v1/namespaces/${ns}/pods`,
      pod(
        'echo',
        {
          containers: [
            {
              name: 'app',
              image: fixture('http-echo'),
              imagePullPolicy: 'Never',
              env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
              ports: [{ name: 'http', containerPort: 8080 }],
              readinessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 1 },
            },
          ],
        },
        { app: 'echo' },
      ),
    );
    await admin().request('POST', `/api/v1/namespaces/${ns}/services`, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'echo', namespace: ns },
      spec: { selector: { app: 'echo' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
    });
    await admin().request(
      'POST',
      `/api/v1/namespaces/${ns}/pods`,
      pod('client', { containers: [{ name: 'idle', image: fixture('http-echo'), imagePullPolicy: 'Never' }] }),
    );

    const echo = await runningPod('echo');
    expect(echo.status.podIP).toMatch(/^10\.23\.\d+\.\d+$/);
    expect(echo.spec.nodeName).toBe((await ensureCluster()).nodeName);
    const st = echo.status.containerStatuses[0];
    expect(st.state.running).toBeTruthy();
    expect(st.containerID).toMatch(/^containerd:\/\/[0-9a-f]{64}$/);
    expect(st.imageID).toMatch(/^sha256:[0-9a-f]{64}$|@sha256:[0-9a-f]{64}$/);

    const slice = await eventually('EndpointSlice listing the pod', async () => {
      const list = await admin().request(
        'GET',
        `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices?labelSelector=kubernetes.io/service-name=echo`,
      );
      return list.items.find((s: KubeObject) =>
        s.endpoints?.some((e: KubeObject) => e.addresses.includes(echo.status.podIP) && e.conditions.ready),
      );
    });
    expect(slice.metadata.labels['endpointslice.kubernetes.io/managed-by']).toBe('endpointslice-controller.k8s.io');
    expect(slice.ports[0].port).toBe(8080);

    await runningPod('client');
    // From inside the client pod's network namespace (host curl, through nsenter from the node).
    const r = await execInPod(ns, 'client', [
      'curl',
      '-sS',
      '--max-time',
      '5',
      `http://${echo.status.podIP}:8080/hello`,
    ]);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toMatchObject({ pod: 'echo', path: '/hello' });

    // Through the Service's ClusterIP (kube-proxy's iptables rules in the node namespace).
    const svc = await admin().request('GET', `/api/v1/namespaces/${ns}/services/echo`);
    const viaService = await eventually(
      'the Service ClusterIP answers',
      async () => {
        const x = await execInPod(ns, 'client', ['curl', '-sS', '--max-time', '3', `http://${svc.spec.clusterIP}/svc`]);
        return x.code === 0 ? x : undefined;
      },
      15_000,
    );
    expect(JSON.parse(viaService.stdout)).toMatchObject({ pod: 'echo', path: '/svc' });

    // By name, from a container: CoreDNS answers echo.<ns>.svc.cluster.local and the short name
    // (the pod's resolv.conf has the search path kubelet wrote).
    await admin().request(
      'POST',
      `/api/v1/namespaces/${ns}/pods`,
      pod('by-name', {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'c',
            image: fixture('http-client'),
            imagePullPolicy: 'Never',
            args: [`http://echo.${ns}.svc.cluster.local/by-name`, '--count', '1'],
          },
          nodeScript(
            'short',
            "require('node:dns').promises.lookup('echo').then((a) => console.log('echo is', a.address), (e) => { console.log(e.message); process.exit(1); })",
          ),
        ],
      }),
    );
    const byName = await finishedPod('by-name');
    expect(byName.status.phase).toBe('Succeeded');
    expect(kubectl('logs', '-n', ns, 'by-name', '-c', 'short').trim()).toBe(`echo is ${svc.spec.clusterIP}`);

    // The host reaches the pod through the node namespace too.
    const fwd = await forwardToNode(`${echo.status.podIP}:8080`);
    try {
      const res = await fetch(`http://127.0.0.1:${fwd.port}/from-host`);
      expect(((await res.json()) as { pod: string }).pod).toBe('echo');
    } finally {
      await fwd.close();
    }
  });

  it('runs init containers to completion first, then the containers, with volumes, env and the service account', async () => {
    await admin().request('POST', `/api/v1/namespaces/${ns}/configmaps`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'cfg' },
      data: { greeting: 'hi' },
    });
    const check = [
      "const fs = require('node:fs');",
      "const out = [fs.readFileSync('/data/init.txt', 'utf8').trim(), fs.readFileSync('/cfg/greeting', 'utf8'), process.env.GREETING + ' ' + process.env.MY_NS, String(process.getuid())];",
      "if (fs.statSync('/tok/token').size > 0) out.push('token-ok');",
      "fs.writeFileSync('/mem/f', 'x'); if (/ \\/mem tmpfs /.test(fs.readFileSync('/proc/mounts', 'utf8'))) out.push('tmpfs-ok');",
      "if (fs.statSync('/var/run/secrets/kubernetes.io/serviceaccount/token').size > 0) out.push('sa-ok');",
      "console.log(out.join('\\n'));",
    ].join('\n');
    await admin().request(
      'POST',
      `/api/v1/namespaces/${ns}/pods`,
      pod('init', {
        restartPolicy: 'Never',
        securityContext: { fsGroup: 2102 },
        volumes: [
          { name: 'work', emptyDir: {} },
          { name: 'mem', emptyDir: { medium: 'Memory' } },
          { name: 'cfg', configMap: { name: 'cfg' } },
          {
            name: 'tok',
            projected: {
              sources: [
                { serviceAccountToken: { path: 'token', audience: 'identity.minimesh.io', expirationSeconds: 600 } },
              ],
            },
          },
        ],
        initContainers: [
          nodeScript('first', "require('node:fs').writeFileSync('/data/init.txt', 'from-init')", {
            volumeMounts: [{ name: 'work', mountPath: '/data' }],
            securityContext: { runAsUser: 2102, runAsGroup: 2102 },
          }),
        ],
        containers: [
          nodeScript('main', check, {
            env: [
              { name: 'GREETING', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'greeting' } } },
              { name: 'MY_NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
            ],
            securityContext: { runAsUser: 2102, runAsGroup: 2102 },
            volumeMounts: [
              { name: 'work', mountPath: '/data' },
              { name: 'mem', mountPath: '/mem' },
              { name: 'cfg', mountPath: '/cfg', readOnly: true },
              { name: 'tok', mountPath: '/tok' },
            ],
          }),
        ],
      }),
    );
    const done = await finishedPod('init');
    const logs = execFileSync('bash', ['../../scripts/cluster.sh', 'logs', `${ns}/init`, '-c', 'main'], {
      encoding: 'utf8',
    });
    expect(logs.trim().split('\n')).toEqual(['from-init', 'hi', `hi ${ns}`, '2102', 'token-ok', 'tmpfs-ok', 'sa-ok']);
    expect(done.status.phase).toBe('Succeeded');
    expect(done.status.initContainerStatuses[0].state.terminated).toMatchObject({ exitCode: 0, reason: 'Completed' });
    expect(done.status.containerStatuses[0].state.terminated).toMatchObject({ exitCode: 0, reason: 'Completed' });
  });

  it('lets a non-root pod use the API in-cluster (the kubernetes Service, the service-account token and CA)', async () => {
    const script = [
      "const https = require('node:https'); const fs = require('node:fs');",
      "const sa = '/var/run/secrets/kubernetes.io/serviceaccount';",
      'const host = process.env.KUBERNETES_SERVICE_HOST, port = process.env.KUBERNETES_SERVICE_PORT;',
      "const body = JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });",
      "const req = https.request({ host, port, method: 'POST', path: '/apis/authentication.k8s.io/v1/selfsubjectreviews', ca: fs.readFileSync(sa + '/ca.crt'), headers: { authorization: 'Bearer ' + fs.readFileSync(sa + '/token', 'utf8'), 'content-type': 'application/json' } }, (res) => {",
      "  let t = ''; res.on('data', (c) => (t += c)); res.on('end', () => console.log(host + ':' + port, JSON.parse(t).status.userInfo.username));",
      '});',
      "req.on('error', (e) => { console.log('ERR', e.message); process.exit(1); }); req.end(body);",
    ].join('\n');
    await admin().request(
      'POST',
      `/api/v1/namespaces/${ns}/pods`,
      pod('incluster', {
        restartPolicy: 'Never',
        containers: [nodeScript('c', script, { securityContext: { runAsUser: 2102 } })],
      }),
    );
    const p = await finishedPod('incluster');
    const logs = execFileSync('bash', ['../../scripts/cluster.sh', 'logs', `${ns}/incluster`], { encoding: 'utf8' });
    expect(logs.trim()).toBe(`10.247.0.1:443 system:serviceaccount:${ns}:default`);
    expect(p.status.phase).toBe('Succeeded');
  });

  it('shows an image that was not built as ErrImageNeverPull, naming the image', async () => {
    await admin().request(
      'POST',
      `/api/v1/namespaces/${ns}/pods`,
      pod('unbuilt', { containers: [{ name: 'c', image: 'minimesh.test/never-built:e2e', imagePullPolicy: 'Never' }] }),
    );
    const p = await eventually('pod unbuilt waiting with ErrImageNeverPull', async () => {
      const x = await admin().request('GET', `/api/v1/namespaces/${ns}/pods/unbuilt`);
      return x.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'ErrImageNeverPull' ? x : undefined;
    });
    expect(p.status.containerStatuses[0].state.waiting.message).toContain('minimesh.test/never-built:e2e');
  });

  it('leaves a pod that names another scheduler Pending and unbound', async () => {
    await admin().request(
      'POST',
      `/api/v1/namespaces/${ns}/pods`,
      pod('elsewhere', { schedulerName: 'none', containers: [{ name: 'c', image: fixture('http-echo') }] }),
    );
    await new Promise((r) => setTimeout(r, 1500));
    const p = await admin().request('GET', `/api/v1/namespaces/${ns}/pods/elsewhere`);
    expect(p.spec.nodeName).toBeUndefined();
    expect(p.status.phase).toBe('Pending');
    expect(p.status.containerStatuses).toBeUndefined();
  });

  it('stops a deleted pod: its containers and sandbox leave containerd', async () => {
    const pid = await podSandboxPid(ns, 'client');
    expect(pid).toBeGreaterThan(0);
    await admin().request('DELETE', `/api/v1/namespaces/${ns}/pods/client`, {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      gracePeriodSeconds: 1,
    });
    await eventually(
      'pod client gone',
      async () => !(await admin().get(`/api/v1/namespaces/${ns}/pods/client`)),
      30_000,
    );
    await eventually('the sandbox process gone', () => !existsSync(`/proc/${pid}`) || isZombie(pid), 10_000);
  });
});

function isZombie(pid: number): boolean {
  try {
    return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}
