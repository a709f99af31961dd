// The conformance run's pieces that need no cluster: the flags as Linkerd's run passes them, the
// declared features, and reading `go test -json` into verdicts and failure messages.
import { describe, expect, it } from 'vitest';
import { conformanceArgs, supportedFeatures, verdicts } from './conformance.js';

describe('the conformance run', () => {
  it("declares Linkerd 2.18's 24 features and the two it leaves out, each once", () => {
    const f = supportedFeatures();
    expect(new Set(f).size).toBe(f.length);
    for (const name of [
      'MeshHTTPRouteRedirectPath',
      'MeshHTTPRouteRewritePath',
      'MeshConsumerRoute',
      'HTTPRouteParentRefPort',
    ])
      expect(f).toContain(name);
    expect(f.length).toBeGreaterThanOrEqual(26);
  });

  it('passes the mesh profiles, the features, the injection annotation and the report path as flags', () => {
    const args = conformanceArgs({ report: '/tmp/r.yaml', namespaceAnnotations: { 'minimesh.io/inject': 'enabled' } });
    expect(args).toContain('--conformance-profiles=MESH-HTTP,MESH-GRPC');
    expect(args).toContain('--exempt-features=Gateway,ReferenceGrant');
    expect(args).toContain('--namespace-annotations=minimesh.io/inject=enabled');
    expect(args).toContain('--report-output=/tmp/r.yaml');
    expect(
      args
        .find((a) => a.startsWith('--supported-features='))
        ?.split('=')[1]
        ?.split(','),
    ).toEqual(supportedFeatures());
  });

  it('reads each test verdict and the first assertion messages of a failed one from go test -json', () => {
    const e = (Action: string, Test?: string, Output?: string) => ({
      Action,
      ...(Test ? { Test } : {}),
      ...(Output ? { Output } : {}),
    });
    const events = [
      e('run', 'TestConformance/MeshBasic'),
      e('pass', 'TestConformance/MeshBasic/case-0'),
      e('pass', 'TestConformance/MeshBasic'),
      e(
        'output',
        'TestConformance/MeshHTTPRouteWeight',
        '    weight.go:80: expected 70% to echo-v1 (± 5%), got 100%\n',
      ),
      e('output', 'TestConformance/MeshHTTPRouteWeight', '    weight.go:81: some info line\n'),
      e('fail', 'TestConformance/MeshHTTPRouteWeight'),
      e('skip', 'TestConformance/MeshHTTPRouteRewritePath'),
      e('fail', 'TestConformance'),
    ];
    expect(verdicts(events)).toEqual({
      tests: { MeshBasic: 'PASS', MeshHTTPRouteWeight: 'FAIL', MeshHTTPRouteRewritePath: 'SKIP' },
      failures: { MeshHTTPRouteWeight: ['weight.go:80: expected 70% to echo-v1 (± 5%), got 100%'] },
    });
  });
});
