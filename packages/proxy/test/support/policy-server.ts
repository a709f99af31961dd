// The policy server linkerd2-proxy insists on (it exits without LINKERD2_PROXY_POLICY_SVC_ADDR): minimesh's
// own policy controller (packages/policy, `minimesh-policy`), run from this checkout against the local
// cluster. Returns the command that starts it, or why it cannot run here.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './netns-mesh.js';

/** What the harness knows when it starts the controller. */
export interface PolicyContext {
  addr: string;
  adminAddr: string;
  kubeconfig: string;
  controllerNamespace: string;
  trustDomain: string;
  clusterNetworks: string;
}

export interface PolicyServer {
  argv?: (ctx: PolicyContext) => string[];
  reason?: string;
}

export function policyServer(): PolicyServer {
  const main = join(ROOT, 'packages/policy/dist/main.js');
  if (!existsSync(main))
    return { reason: `minimesh's policy controller is not built in this checkout (${main} is missing: npm run build)` };
  return {
    argv: (c) => [
      process.execPath,
      main,
      '--addr',
      c.addr,
      '--admin-addr',
      c.adminAddr,
      '--controller-namespace',
      c.controllerNamespace,
      '--identity-trust-domain',
      c.trustDomain,
      '--cluster-networks',
      c.clusterNetworks,
      '--default-policy',
      'all-unauthenticated',
      '--kubeconfig',
      c.kubeconfig,
    ],
  };
}

/**
 * Why a test of linkerd2-proxy against minimesh's control plane cannot run here (said on stderr as
 * `<file> skipped: ...`), or undefined: the peer binary, the policy controller (linkerd2-proxy does
 * not start without one) and root (network namespaces, iptables, setpriv) are needed.
 */
export function peerSkipReason(file: string, peer: string | undefined, policy: PolicyServer): string | undefined {
  const why = !peer
    ? 'linkerd2-proxy not given: set MINIMESH_PEER_LINKERD2_PROXY to its binary (or install it at /opt/minimesh-peers/linkerd2-proxy)'
    : !policy.argv
      ? `linkerd2-proxy needs a policy server: ${policy.reason}`
      : process.getuid?.() !== 0
        ? 'the test runs as root (network namespaces, iptables, setpriv)'
        : undefined;
  if (why) process.stderr.write(`${file} skipped: ${why}\n`);
  return why;
}
