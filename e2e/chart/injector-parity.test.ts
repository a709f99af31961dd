// The chart renders the control plane's own proxy-init and proxy containers; the injector adds the same
// containers to application pods. This test feeds the chart's own pod templates (with the mesh parts
// removed) to the injector's createPatch, with the MeshConfig the chart rendered, and requires the
// result to equal what the chart rendered. It fails as soon as the two drift.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import jsonpatch from 'fast-json-patch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMeshConfig } from '@minimesh/config';
import { createPatch, type PodLike } from '@minimesh/injector';
import { createTestCerts, type CertFiles } from '../src/certs.js';
import { findObject, renderObjects, tutorialInstallArgs, type K8sObject } from '../src/chart.js';

let tmp: string;
let certs: CertFiles;
let objects: K8sObject[];
let classic: K8sObject[];
let viz: K8sObject[];

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'mm-parity-'));
  certs = await createTestCerts(tmp);
  objects = await renderObjects('minimesh', tutorialInstallArgs(certs));
  classic = await renderObjects('minimesh', [...tutorialInstallArgs(certs), '--set', 'proxy.nativeSidecar=false']);
  // With viz, every proxy (the chart's and the injector's) is told the tap service's identity.
  viz = await renderObjects('minimesh', [...tutorialInstallArgs(certs), '--set', 'viz.enabled=true']);
});
afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

const objectsNative = (): K8sObject[] => objects;
type Named = { name: string; [k: string]: unknown };
interface Template {
  metadata: { labels: Record<string, string>; annotations: Record<string, string> };
  spec: { initContainers: Named[]; containers: Named[]; volumes: Named[]; [k: string]: unknown };
}

const MESH_CONTAINERS = new Set(['minimesh-init', 'minimesh-proxy']);
const MESH_VOLUMES = new Set([
  'minimesh-proxy-init-xtables-lock',
  'minimesh-identity-end-entity',
  'minimesh-identity-token',
]);

describe("the chart's control-plane proxies equal what the injector adds", () => {
  it.each([
    ['minimesh-destination', 'native'],
    ['minimesh-injector', 'native'],
    ['minimesh-identity', 'native'],
    ['minimesh-destination', 'classic'],
    ['minimesh-identity', 'classic'],
    ['minimesh-destination', 'viz'],
    ['minimesh-tap', 'viz'],
  ] as const)('%s (%s sidecar)', (name, mode) => {
    const objects = mode === 'native' ? objectsNative() : mode === 'viz' ? viz : classic;
    const cm = findObject(objects, 'ConfigMap', 'minimesh-config') as unknown as { data: Record<string, string> };
    const config = parseMeshConfig(JSON.parse(cm.data['config.json'] ?? ''));
    const template = structuredClone(
      (findObject(objects, 'Deployment', name) as unknown as { spec: { template: Template } }).spec.template,
    );

    // The pod as a user would have written it: no mesh containers or volumes, asking for injection.
    const pod: PodLike = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { namespace: 'parity', annotations: { 'minimesh.io/inject': 'enabled' }, labels: { app: name } },
      spec: {
        ...template.spec,
        initContainers: template.spec.initContainers.filter((c) => !MESH_CONTAINERS.has(c.name)),
        containers: template.spec.containers.filter((c) => !MESH_CONTAINERS.has(c.name)),
        volumes: template.spec.volumes.filter((v) => !MESH_VOLUMES.has(v.name)),
      },
    };
    // (In the control-plane namespace itself the injector refuses, as it should: use another one.)
    const { patch } = createPatch(pod, { config, namespace: 'parity' });
    expect(patch.length).toBeGreaterThan(0);
    const injected = jsonpatch.applyPatch(structuredClone(pod), patch as jsonpatch.Operation[])
      .newDocument as unknown as Template;

    const meshOf = (t: Template): Named[] =>
      [...t.spec.initContainers, ...t.spec.containers].filter((c) => MESH_CONTAINERS.has(c.name));
    const chartMesh = meshOf(template);
    const injectorMesh = meshOf(injected);
    // Same places too: native → initContainers[0..1]; classic → init first, proxy first of the containers.
    expect(template.spec.containers.map((c) => c.name)).toEqual(injected.spec.containers.map((c) => c.name));
    expect(template.spec.initContainers.map((c) => c.name)).toEqual(injected.spec.initContainers.map((c) => c.name));
    if (name === 'minimesh-identity') {
      // The one intended difference: identity's proxy asks its own identity over loopback, and cannot
      // wait for readiness before the identity container starts.
      const proxy = injectorMesh.find((c) => c.name === 'minimesh-proxy') as unknown as {
        env: { name: string; value?: string }[];
        startupProbe?: unknown;
      };
      proxy.env = proxy.env.map((e) =>
        e.name === 'MINIMESH_PROXY_IDENTITY_SVC_ADDR' ? { ...e, value: 'localhost:8080' } : e,
      );
      delete proxy.startupProbe;
    }
    expect(chartMesh).toEqual(injectorMesh);
    expect(template.spec.volumes.filter((v) => MESH_VOLUMES.has(v.name))).toEqual(
      injected.spec.volumes.filter((v) => MESH_VOLUMES.has(v.name)),
    );
    expect(template.metadata.annotations['minimesh.io/trust-root-sha256']).toBe(
      injected.metadata.annotations['minimesh.io/trust-root-sha256'],
    );
  });
});
