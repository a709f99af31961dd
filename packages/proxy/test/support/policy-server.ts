// The policy server linkerd2-proxy insists on (it exits without LINKERD2_PROXY_POLICY_SVC_ADDR): minimesh's
// own policy controller, run from this checkout against the local cluster. Returns the command that starts
// it listening on an address, or why it cannot run here.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './netns-mesh.js';

export interface PolicyServer {
  argv?: (addr: string) => string[];
  reason?: string;
}

export function policyServer(): PolicyServer {
  const main = join(ROOT, 'packages/policy/dist/main.js');
  if (!existsSync(main)) return { reason: `minimesh's policy controller is not in this checkout (${main} is missing)` };
  return { reason: `minimesh's policy controller (${main}) is not wired into this harness yet` };
}
