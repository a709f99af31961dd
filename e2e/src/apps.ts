// The apps the e2e specs (and the demo) run on a cluster, one home for each: the meshed app namespace,
// Deployments of the fixture images (the driver's pull policy on every container), the echo server
// and its clients, a Node script in the fixture image (it has no shell), waiting for an app's pods,
// and a spec's mesh set up (chart, control plane ready) and taken down.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Driver } from '../drivers/types.js';
import type { CertFiles } from './certs.js';
import type { K8sObject } from './chart.js';
import {
  createMeshCerts,
  describePods,
  E2E_SCOPE_LABEL,
  installChart,
  SERVER_GRPC_PORT,
  SERVER_HTTP_PORT,
  uninstallChart,
  waitForReadyPods,
  type MeshSetup,
  type Pod,
} from './mesh.js';

/** The label the control plane's pods carry, as `app` is the apps'. */
export const CONTROL_PLANE_KEY = 'minimesh.io/control-plane-component';
/** The control-plane components a spec waits for before it applies its apps. */
export const CONTROL_PLANE = ['identity', 'destination', 'injector'] as const;

export const POD_NAME_ENV = { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } };

export interface DeploymentOptions {
  replicas?: number;
  /** The pods' ServiceAccount (none: the namespace's default). */
  serviceAccount?: string;
  /** terminationGracePeriodSeconds; default 5. */
  graceSeconds?: number;
  /** Labels beside `app: <name>` on the pods (not in the selector). */
  podLabels?: Record<string, string>;
  podAnnotations?: Record<string, string>;
  /** More fields of the pod spec (a securityContext). */
  podSpec?: Record<string, unknown>;
  /** Fields every container gets (a securityContext). */
  containerDefaults?: Record<string, unknown>;
}

/** A Deployment `name` (label and selector `app: <name>`) of `containers`. */
export function deployment(
  driver: Pick<Driver, 'imagePullPolicy'>,
  ns: string,
  name: string,
  containers: readonly Record<string, unknown>[],
  o: DeploymentOptions = {},
): K8sObject {
  const pull = driver.imagePullPolicy ? { imagePullPolicy: driver.imagePullPolicy } : {};
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: ns, labels: { app: name } },
    spec: {
      replicas: o.replicas ?? 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: {
          labels: { app: name, ...o.podLabels },
          ...(o.podAnnotations ? { annotations: o.podAnnotations } : {}),
        },
        spec: {
          ...(o.serviceAccount ? { serviceAccountName: o.serviceAccount } : {}),
          terminationGracePeriodSeconds: o.graceSeconds ?? 5,
          ...o.podSpec,
          containers: containers.map((c) => ({ ...c, ...pull, ...o.containerDefaults })),
        },
      },
    },
  };
}

export function serviceAccount(ns: string, name: string): K8sObject {
  return { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: ns } };
}

/** A Service `name` on the echo server's HTTP port, selecting `selector` (default `app: <name>`). */
export function httpService(
  ns: string,
  name: string,
  selector: Record<string, string> = { app: name },
  annotations?: Record<string, string>,
): K8sObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: ns, ...(annotations ? { annotations } : {}) },
    spec: { selector, ports: [{ name: 'http', port: SERVER_HTTP_PORT, targetPort: SERVER_HTTP_PORT }] },
  };
}

/**
 * The spec's app namespace, injected (minimesh.io/inject: enabled); on a shared cluster labelled so only
 * the spec's own webhook sees it. `annotations` and `labels` add to it (a default policy, Pod Security).
 */
export function meshedNamespace(
  m: Pick<MeshSetup, 'appNs' | 'cpNs' | 'scopeWebhook'>,
  o: { annotations?: Record<string, string>; labels?: Record<string, string> } = {},
): K8sObject {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name: m.appNs,
      labels: { ...(m.scopeWebhook ? { [E2E_SCOPE_LABEL]: m.cpNs } : {}), ...o.labels },
      annotations: { 'minimesh.io/inject': 'enabled', ...o.annotations },
    },
  };
}

/** The http-echo fixture's container: answers on the HTTP port with its pod's name, ready on /healthz. */
export function echoContainer(driver: Pick<Driver, 'fixtureImage'>, extra: Record<string, unknown> = {}) {
  return {
    name: 'http',
    image: driver.fixtureImage('http-echo'),
    env: [POD_NAME_ENV, { name: 'PORT', value: String(SERVER_HTTP_PORT) }],
    ports: [{ name: 'http', containerPort: SERVER_HTTP_PORT }],
    readinessProbe: { httpGet: { path: '/healthz', port: SERVER_HTTP_PORT }, periodSeconds: 2 },
    ...extra,
  };
}

/** The echo server as `name` (default server): its ServiceAccount, its Service and its Deployment. */
export function echoServer(
  m: Pick<MeshSetup, 'appNs' | 'driver'>,
  o: { name?: string } & DeploymentOptions = {},
): K8sObject[] {
  const { name = 'server', ...deploy } = o;
  return [
    serviceAccount(m.appNs, name),
    httpService(m.appNs, name),
    deployment(m.driver, m.appNs, name, [echoContainer(m.driver)], { serviceAccount: name, ...deploy }),
  ];
}

/** The http-client fixture's container: GET `url` every 500 ms forever, one JSON line per answer. */
export function clientContainer(driver: Pick<Driver, 'fixtureImage'>, url: string) {
  return {
    name: 'http',
    image: driver.fixtureImage('http-client'),
    args: [url, '--forever', '--interval-ms', '500'],
    env: [POD_NAME_ENV],
  };
}

/**
 * A client `name` calling `url`: its own ServiceAccount (or `o.serviceAccount`, made elsewhere) and a
 * Deployment of the http-client fixture; `meshed: false` opts its pods out of injection.
 */
export function httpClient(
  m: Pick<MeshSetup, 'appNs' | 'driver'>,
  name: string,
  url: string,
  o: { meshed?: boolean } & DeploymentOptions = {},
): K8sObject[] {
  const { meshed, serviceAccount: sa, ...deploy } = o;
  return [
    ...(sa ? [] : [serviceAccount(m.appNs, name)]),
    deployment(m.driver, m.appNs, name, [clientContainer(m.driver, url)], {
      serviceAccount: sa ?? name,
      ...(meshed === false ? { podAnnotations: { 'minimesh.io/inject': 'disabled' } } : {}),
      ...deploy,
    }),
  ];
}

/** A container running `script` with the fixture image's Node (the fixture images have no shell). */
export function nodeScriptContainer(
  driver: Pick<Driver, 'fixtureImage'>,
  script: string,
  o: { name?: string; image?: string; extra?: Record<string, unknown> } = {},
) {
  return {
    name: o.name ?? 'app',
    image: driver.fixtureImage(o.image ?? 'http-client'),
    command: ['node', '-e', script],
    ...o.extra,
  };
}

/** The client and server apps of the mesh, tap, viz and faults specs (HTTP and gRPC each). */
export function appObjects(
  m: Pick<MeshSetup, 'appNs' | 'cpNs' | 'scopeWebhook' | 'driver'>,
  serverReplicas = 1,
): K8sObject[] {
  const ns = m.appNs;
  const host = `server.${ns}.svc.cluster.local`;
  return [
    meshedNamespace(m),
    serviceAccount(ns, 'server'),
    serviceAccount(ns, 'client'),
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'server', namespace: ns },
      spec: {
        selector: { app: 'server' },
        ports: [
          { name: 'http', port: SERVER_HTTP_PORT, targetPort: SERVER_HTTP_PORT },
          { name: 'grpc', port: SERVER_GRPC_PORT, targetPort: SERVER_GRPC_PORT, appProtocol: 'kubernetes.io/h2c' },
        ],
      },
    },
    deployment(
      m.driver,
      ns,
      'server',
      [
        echoContainer(m.driver),
        {
          name: 'grpc',
          image: m.driver.fixtureImage('grpc-echo'),
          env: [POD_NAME_ENV, { name: 'PORT', value: String(SERVER_GRPC_PORT) }],
          ports: [{ name: 'grpc', containerPort: SERVER_GRPC_PORT }],
        },
      ],
      { replicas: serverReplicas, serviceAccount: 'server' },
    ),
    deployment(
      m.driver,
      ns,
      'client',
      [
        clientContainer(m.driver, `http://${host}:${SERVER_HTTP_PORT}/`),
        {
          name: 'grpc',
          image: m.driver.fixtureImage('http-client'),
          command: ['node', 'e2e/scripts/grpc-client.mjs'],
          args: [`${host}:${SERVER_GRPC_PORT}`, '--forever', '--interval-ms', '500'],
          env: [POD_NAME_ENV],
        },
      ],
      { serviceAccount: 'client' },
    ),
  ];
}

/**
 * Waits for `count` ready pods of app `app` in the spec's app namespace (or, `controlPlane`, of the
 * control-plane component `app`); on failure the message says what the namespace's pods are doing.
 */
export async function readyPods(
  m: Pick<MeshSetup, 'appNs' | 'cpNs' | 'driver'>,
  app: string,
  o: { count?: number; timeoutMs?: number; controlPlane?: boolean } = {},
): Promise<Pod[]> {
  const namespace = o.controlPlane ? m.cpNs : m.appNs;
  const key = o.controlPlane ? CONTROL_PLANE_KEY : 'app';
  try {
    return await waitForReadyPods(m.driver, namespace, app, o.count ?? 1, o.timeoutMs ?? 180_000, key);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${await describePods(m.driver, namespace)}`, { cause: err });
  }
}

/** The first of readyPods(). */
export async function readyPod(
  m: Pick<MeshSetup, 'appNs' | 'cpNs' | 'driver'>,
  app: string,
  o: { timeoutMs?: number; controlPlane?: boolean } = {},
): Promise<Pod> {
  return (await readyPods(m, app, o))[0]!;
}

export interface SpecMesh {
  /** The spec's scratch directory (certificates). */
  tmp: string;
  certs: CertFiles;
}

/**
 * A spec's beforeAll: the cluster up, the mesh's certificates in a scratch directory, the chart
 * installed and `components` (default identity, destination, injector) ready. `before` runs between
 * the certificates and the install (Gateway API CRDs).
 */
export async function setUpSpecMesh(
  m: MeshSetup,
  o: { tmpPrefix: string; components?: readonly string[]; timeoutMs?: number; before?: () => Promise<void> },
): Promise<SpecMesh> {
  await m.driver.setup();
  const tmp = mkdtempSync(join(tmpdir(), o.tmpPrefix));
  const certs = await createMeshCerts(tmp);
  await o.before?.();
  await installChart(m, certs);
  for (const c of o.components ?? CONTROL_PLANE)
    await readyPods(m, c, { controlPlane: true, ...(o.timeoutMs ? { timeoutMs: o.timeoutMs } : {}) });
  return { tmp, certs };
}

/**
 * A spec's afterAll: its app namespace deleted (not waited for), on the local cluster its release
 * uninstalled, its scratch directory removed; MINIMESH_E2E_KEEP keeps everything for a look.
 */
export async function tearDownSpecMesh(m: MeshSetup, spec: SpecMesh | undefined): Promise<void> {
  if (process.env.MINIMESH_E2E_KEEP) return;
  await m.driver.kubectl(['delete', 'namespace', m.appNs, '--wait=false', '--ignore-not-found']).catch(() => undefined);
  if (m.driver.name === 'local') await uninstallChart(m).catch(() => undefined);
  if (spec) rmSync(spec.tmp, { recursive: true, force: true });
}
