// Done-when 2: a bare Pod of an e2e fixture and a Service: the pod runs and gets Ready with an IP,
// the real endpointslice controller lists it, and another pod's network namespace reaches it.
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminClient,
  createNamespace,
  ensureCluster,
  execInPod,
  forwardToNode,
  type KubeObject,
} from '../src/index.js';
import { eventually, uniqueName } from './helpers.js';

const ns = uniqueName('lc-pods');
const repoRoot = resolve(import.meta.dirname, '..', '..', '..');
const admin = () => adminClient();

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

beforeAll(async () => {
  await ensureCluster();
  await createNamespace(ns);
});

afterAll(async () => {
  await admin()
    .request('DELETE', `/api/v1/namespaces/${ns}`)
    .catch(() => undefined);
});

describe('pods on the local cluster', () => {
  it('runs a fixture pod behind a Service: Ready with an IP, in an EndpointSlice, reachable from another pod', async () => {
    await admin().request(
      'POST',
      `/api/v1/namespaces/${ns}/pods`,
      pod(
        'echo',
        {
          containers: [
            {
              name: 'app',
              image: 'minimesh.test/http-echo:v1',
              env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
              ports: [{ name: 'http', containerPort: 8080 }],
              readinessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 2 },
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
      pod('client', { containers: [{ name: 'sh', image: 'busybox', command: ['sleep', '3600'] }] }),
    );

    const echo = await runningPod('echo');
    expect(echo.status.podIP).toMatch(/^10\.23\.\d+\.\d+$/);
    expect(echo.spec.nodeName).toBe('mm-node');
    expect(echo.status.containerStatuses[0].state.running).toBeTruthy();

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
    const r = await execInPod(ns, 'client', [
      'curl',
      '-sS',
      '--max-time',
      '5',
      `http://${echo.status.podIP}:8080/hello`,
    ]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ pod: 'echo', path: '/hello' });

    // Through the Service: its ClusterIP (the agent's iptables DNAT in the node namespace), and its
    // name from a container (the agent's /etc/hosts).
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
    await admin().request(
      'POST',
      `/api/v1/namespaces/${ns}/pods`,
      pod('by-name', {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'c',
            image: 'minimesh.test/http-client:v1',
            args: [`http://echo.${ns}.svc.cluster.local/by-name`, '--count', '1'],
          },
        ],
      }),
    );
    const byName = await eventually('pod by-name finished', async () => {
      const x = await admin().request('GET', `/api/v1/namespaces/${ns}/pods/by-name`);
      return ['Succeeded', 'Failed'].includes(x.status?.phase) ? x : undefined;
    });
    expect(byName.status.phase).toBe('Succeeded');

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
    await admin().request(
      'POST',
      `/api/v1/namespaces/${ns}/pods`,
      pod('init', {
        restartPolicy: 'Never',
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
          {
            name: 'first',
            image: 'busybox',
            command: ['sh', '-c', 'echo from-init > /mm-test/work/init.txt'],
            volumeMounts: [{ name: 'work', mountPath: '/mm-test/work' }],
            workingDir: '/mm-test',
          },
        ],
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: [
              'sh',
              '-c',
              'cat /mm-test/work/init.txt /mm-test/cfg/greeting; echo; echo $GREETING $MY_NS; id -u; test -s /mm-test/tok/token && echo token-ok; echo x > /mm-test/mem/f && grep -q "/mm-test/mem tmpfs" /proc/mounts && echo tmpfs-ok; test -s /var/run/secrets/kubernetes.io/serviceaccount/token && echo sa-ok',
            ],
            env: [
              { name: 'GREETING', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'greeting' } } },
              { name: 'MY_NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
            ],
            securityContext: { runAsUser: 2102, runAsGroup: 2102 },
            volumeMounts: [
              { name: 'work', mountPath: '/mm-test/work' },
              { name: 'mem', mountPath: '/mm-test/mem' },
              { name: 'cfg', mountPath: '/mm-test/cfg', readOnly: true },
              { name: 'tok', mountPath: '/mm-test/tok' },
            ],
          },
        ],
      }),
    );
    const done = await eventually('pod init Succeeded', async () => {
      const p = await admin().request('GET', `/api/v1/namespaces/${ns}/pods/init`);
      return p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed' ? p : undefined;
    });
    expect(done.status.phase).toBe('Succeeded');
    expect(done.status.initContainerStatuses[0].state.terminated).toMatchObject({ exitCode: 0, reason: 'Completed' });
    expect(done.status.containerStatuses[0].state.terminated).toMatchObject({ exitCode: 0, reason: 'Completed' });
    const logs = execFileSync('bash', ['../../scripts/cluster.sh', 'logs', `${ns}/init`, '-c', 'main'], {
      encoding: 'utf8',
    });
    expect(logs).toContain('from-init');
    expect(logs).toContain(`hi ${ns}`);
    expect(logs).toContain('2102');
    expect(logs).toContain('token-ok');
    expect(logs).toContain('tmpfs-ok');
    expect(logs).toContain('sa-ok');
  });

  it('lets a non-root pod use the API in-cluster (KUBERNETES_SERVICE_HOST, the service-account token and CA)', async () => {
    const script = [
      "const k8s = require('@kubernetes/client-node');",
      'const kc = new k8s.KubeConfig(); kc.loadFromCluster();',
      "kc.makeApiClient(k8s.AuthenticationV1Api).createSelfSubjectReview({ body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } })",
      "  .then((r) => console.log(kc.getCurrentCluster().server, r.status.userInfo.username), (e) => { console.log('ERR', e.message); process.exit(1); });",
    ].join('\n');
    await admin().request(
      'POST',
      `/api/v1/namespaces/${ns}/pods`,
      pod('incluster', {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'c',
            image: 'busybox',
            workingDir: repoRoot,
            command: ['node', '-e', script],
            securityContext: { runAsUser: 2102 },
          },
        ],
      }),
    );
    const p = await eventually('pod incluster finished', async () => {
      const x = await admin().request('GET', `/api/v1/namespaces/${ns}/pods/incluster`);
      return ['Succeeded', 'Failed'].includes(x.status?.phase) ? x : undefined;
    });
    const logs = execFileSync('bash', ['../../scripts/cluster.sh', 'logs', `${ns}/incluster`], { encoding: 'utf8' });
    expect(logs.trim()).toBe(`https://10.23.0.1:6443 system:serviceaccount:${ns}:default`);
    expect(p.status.phase).toBe('Succeeded');
  });

  it('fails a pod whose image is not in the table, naming the image', async () => {
    await admin().request(
      'POST',
      `/api/v1/namespaces/${ns}/pods`,
      pod('unknown', { containers: [{ name: 'c', image: 'docker.io/library/nginx:1.27' }] }),
    );
    const p = await eventually('pod unknown Failed', async () => {
      const x = await admin().request('GET', `/api/v1/namespaces/${ns}/pods/unknown`);
      return x.status?.phase === 'Failed' ? x : undefined;
    });
    expect(p.status.containerStatuses[0].state.waiting.reason).toBe('ErrImageNeverPull');
    expect(p.status.message).toContain('docker.io/library/nginx:1.27');
  });

  it('leaves a pod that names another scheduler Pending and untouched', async () => {
    await admin().request(
      'POST',
      `/api/v1/namespaces/${ns}/pods`,
      pod('elsewhere', { schedulerName: 'none', containers: [{ name: 'c', image: 'minimesh.test/none:v1' }] }),
    );
    // The agent sees pods within milliseconds; give it well over that.
    await new Promise((r) => setTimeout(r, 1500));
    const p = await admin().request('GET', `/api/v1/namespaces/${ns}/pods/elsewhere`);
    expect(p.spec.nodeName).toBeUndefined();
    expect(p.status.phase).toBe('Pending');
    expect(p.status.containerStatuses).toBeUndefined();
  });

  it('stops a deleted pod and removes it', async () => {
    const before = await runningPod('client');
    await admin().request('DELETE', `/api/v1/namespaces/${ns}/pods/client`, {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      gracePeriodSeconds: 2,
    });
    await eventually(
      'pod client gone',
      async () => !(await admin().get(`/api/v1/namespaces/${ns}/pods/client`)),
      20_000,
    );
    const { podNetnsName } = await import('../src/index.js');
    const netns = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
    expect(netns).not.toContain(podNetnsName(before.metadata.uid));
  });
});
