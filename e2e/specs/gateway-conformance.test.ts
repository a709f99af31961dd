// PENDING (not in e2e/specs.json's specs/**, so npm test does not run it): the CI subset of the Gateway
// API conformance suite (npm run conformance is the whole suite; docs/conformance/README.md). It passed
// (8 of 8) with proxy-init's self-redirect rule, which was reverted (it broke the trust-anchor rotation
// in the faults spec); without it the requests the suite's client (an echo pod) sends to its own pod fail,
// so it waits here for a fix of the self-call that keeps the rotation whole.
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
