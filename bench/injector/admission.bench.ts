// Admission latency at a constant 200 requests/s (open loop), measured at the server (fastify's
// elapsed time from request to response) and at the client, for two request kinds in the same run:
//   baseline: a pod that is not opted in (parse the review, decide, answer without a patch)
//   inject:   a typical Deployment pod that is injected (the full patch, base64 in the response)
// Goal (issue 6): server-side p99 under 5 ms for inject. Reported as figures and as a ratio to the baseline.
import { fork } from 'node:child_process';
import { rmSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeTestCert } from '@minimesh/test-support/tls';

const here = dirname(fileURLToPath(import.meta.url));
const RATE = Number(process.env.BENCH_RATE ?? 200);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
// The webhook's serving certificate: throwaway, for 127.0.0.1.
const tls = makeTestCert({ cn: 'bench', days: 1 });
const dir = tls.dir;
const cert = tls.cert;

function pod(annotations: Record<string, string>): unknown {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: 'web-6d4cf56db6-',
      namespace: 'shop',
      labels: { app: 'web', 'pod-template-hash': '6d4cf56db6' },
      annotations,
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          name: 'web-6d4cf56db6',
          uid: '1f2e',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      serviceAccountName: 'web',
      volumes: [
        {
          name: 'kube-api-access',
          projected: { sources: [{ serviceAccountToken: { path: 'token', expirationSeconds: 3607 } }] },
        },
      ],
      containers: [
        {
          name: 'web',
          image: 'nginx:1.27',
          ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }],
          env: Array.from({ length: 10 }, (_, i) => ({ name: `VAR_${i}`, value: `value-${i}` })),
          resources: { requests: { cpu: '100m', memory: '64Mi' } },
          volumeMounts: [
            { name: 'kube-api-access', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true },
          ],
          readinessProbe: { httpGet: { path: '/healthz', port: 8080 } },
        },
        { name: 'metrics', image: 'example/exporter:1', ports: [{ name: 'metrics', containerPort: 9102 }] },
      ],
      restartPolicy: 'Always',
      dnsPolicy: 'ClusterFirst',
    },
  };
}

function review(object: unknown, uid: number): string {
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: `bench-${uid}`,
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      namespace: 'shop',
      operation: 'CREATE',
      userInfo: { username: 'system:serviceaccount:kube-system:replicaset-controller' },
      object,
      dryRun: false,
    },
  });
}

const bodies = {
  baseline: (i: number) => review(pod({}), i),
  inject: (i: number) =>
    review(pod({ 'minimesh.io/inject': 'enabled', 'config.minimesh.io/proxy-log-level': 'debug' }), i),
};

const child = fork(join(here, 'server.ts'), [tls.certFile, tls.keyFile, cert], {
  execArgv: ['--import', 'tsx'],
  stdio: 'inherit',
});
const port = await new Promise<number>((resolve) =>
  child.on('message', (m: { type: string; port: number }) => m.type === 'listening' && resolve(m.port)),
);
const serverSamples = (): Promise<number[]> =>
  new Promise((resolve) => {
    child.once('message', (m: { samples: number[] }) => resolve(m.samples));
    child.send({ type: 'stats' });
  });

// The API server keeps connections to a webhook alive; so does this client.
const agent = new Agent({ keepAlive: true, maxSockets: 16, ca: cert });

function send(body: string): Promise<{ ms: number; patched: boolean }> {
  const start = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path: '/', method: 'POST', agent, headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          if (res.statusCode !== 200) return reject(new Error(`status ${res.statusCode}: ${text}`));
          resolve({
            ms: Number(process.hrtime.bigint() - start) / 1e6,
            patched: text.includes('"patchType":"JSONPatch"'),
          });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function phase(
  name: keyof typeof bodies,
  seconds: number,
): Promise<{ client: number[]; server: number[]; patched: number; sent: number }> {
  await serverSamples(); // reset
  const total = Math.round(RATE * seconds);
  const interval = 1000 / RATE;
  const started = performance.now();
  const inflight: Promise<{ ms: number; patched: boolean }>[] = [];
  for (let i = 0; i < total; i++) {
    const due = started + i * interval;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    inflight.push(send(bodies[name](i)));
  }
  const results = await Promise.all(inflight);
  return {
    client: results.map((r) => r.ms).sort((a, b) => a - b),
    server: await serverSamples(),
    patched: results.filter((r) => r.patched).length,
    sent: total,
  };
}

const q = (s: number[], p: number): number => s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? NaN;
const fmt = (n: number): string => n.toFixed(2).padStart(7);

await phase('inject', 3); // warm up: JIT, TLS sessions, connection pool
const rows: Record<string, Awaited<ReturnType<typeof phase>>> = {};
rows.baseline = await phase('baseline', SECONDS);
rows.inject = await phase('inject', SECONDS);

console.log(
  `injector admission latency: ${RATE} req/s for ${SECONDS} s per phase, keep-alive HTTPS, server in its own process (ms)`,
);
console.log(
  `${'phase'.padEnd(10)} ${'n'.padStart(6)} ${'patched'.padStart(8)} | server p50     p90     p99     max | client p50     p99`,
);
for (const [name, r] of Object.entries(rows)) {
  console.log(
    `${name.padEnd(10)} ${String(r.server.length).padStart(6)} ${String(r.patched).padStart(8)} | ${fmt(q(r.server, 0.5))} ${fmt(q(r.server, 0.9))} ${fmt(q(r.server, 0.99))} ${fmt(r.server[r.server.length - 1] ?? NaN)} | ${fmt(q(r.client, 0.5))} ${fmt(q(r.client, 0.99))}`,
  );
}
const p99 = q(rows.inject!.server, 0.99);
const ratio = p99 / q(rows.baseline!.server, 0.99);
console.log(
  `inject server p99 ${p99.toFixed(2)} ms (goal < 5 ms: ${p99 < 5 ? 'met' : 'NOT met'}); ratio to the baseline p99: ${ratio.toFixed(2)}x`,
);
console.log(
  JSON.stringify({
    bench: 'injector-admission',
    rate: RATE,
    seconds: SECONDS,
    injectServerP99Ms: p99,
    baselineServerP99Ms: q(rows.baseline!.server, 0.99),
    ratio,
  }),
);

agent.destroy();
child.send({ type: 'stop' });
await new Promise((r) => child.once('exit', r));
rmSync(dir, { recursive: true, force: true });
