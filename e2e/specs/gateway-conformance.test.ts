// The CI subset of the Gateway API conformance suite (npm run conformance is the whole suite;
// docs/conformance/README.md). The suite's client is an echo pod that is also a backend of the routes it
// calls, so these tests also prove a pod reaches its own Service (the proxy's local endpoints).
// The tests: the weight split of HTTPRoute and GRPCRoute, request header modifiers on the route and on a
// backend, and the redirects (host and status, scheme, port, path), on minimesh installed as a user
// installs it with the Gateway API CRDs applied first.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectDriver } from '../drivers/index.js';
import { installForConformance, runConformance, type ConformanceInstall } from '../src/conformance.js';

export const CI_SUBSET = [
  'MeshHTTPRouteWeight',
  'MeshGRPCRouteWeight',
  'MeshHTTPRouteRequestHeaderModifier',
  'MeshHTTPRouteBackendRequestHeaderModifier',
  'MeshHTTPRouteRedirectHostAndStatus',
  'MeshHTTPRouteSchemeRedirect',
  'MeshHTTPRouteRedirectPort',
  'MeshHTTPRouteRedirectPath',
] as const;

const driver = selectDriver();
let tmp = '';
let install: ConformanceInstall | undefined;

beforeAll(async () => {
  await driver.setup();
  tmp = mkdtempSync(join(tmpdir(), 'mm-gwc-'));
  install = await installForConformance(driver, tmp);
}, 900_000);

afterAll(async () => {
  await install?.uninstall().catch(() => undefined);
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('the Gateway API conformance suite, CI subset', () => {
  it(`passes ${CI_SUBSET.join(', ')}`, async () => {
    if (!install) throw new Error('minimesh is not installed (see beforeAll)');
    const r = await runConformance({
      kubeconfig: install.kubeconfig,
      report: join(tmp, 'report.yaml'),
      namespaceAnnotations: install.namespaceAnnotations,
      ...(install.namespaceLabels ? { namespaceLabels: install.namespaceLabels } : {}),
      tests: CI_SUBSET,
    });
    const failed = Object.entries(r.tests).filter(([, v]) => v !== 'PASS');
    expect(failed, failed.map(([n]) => `${n}: ${(r.failures[n] ?? []).join(' | ')}`).join('\n')).toEqual([]);
    expect(Object.keys(r.tests).sort()).toEqual([...CI_SUBSET].sort());
    expect(r.code, r.output.slice(-4000)).toBe(0);
  }, 1_800_000);
});
