// Pod networking: one network namespace per pod, a veth pair to the node namespace's bridge, an
// address from the cluster CIDR, and a default route via the node.
import { execFileSync } from 'node:child_process';
import { BRIDGE, NODE_IP, NODE_NETNS } from '../paths.js';

function ip(...args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Hands out 10.23.x.y addresses (10.23.1.1 upward; 10.23.0.0/24 is the node's). */
export class IpAllocator {
  private readonly used = new Set<string>();
  private next = 256 + 1;

  reserve(addr: string): void {
    this.used.add(addr);
  }

  release(addr: string): void {
    this.used.delete(addr);
  }

  allocate(): string {
    for (let i = 0; i < 65_000; i++) {
      const n = this.next;
      this.next = this.next >= 65_534 ? 257 : this.next + 1;
      const addr = `10.23.${n >> 8}.${n & 255}`;
      if ((n & 255) === 0 || (n & 255) === 255 || this.used.has(addr)) continue;
      this.used.add(addr);
      return addr;
    }
    throw new Error('pod network: no free address in 10.23.0.0/16');
  }
}

export function vethName(netns: string): string {
  return `mmv${netns.slice(-12)}`;
}

/** Creates the pod's namespace and wires it to the bridge with `addr`. Replaces a stale one. */
export function createPodNetwork(netns: string, addr: string): void {
  deletePodNetwork(netns);
  const veth = vethName(netns);
  ip('netns', 'add', netns);
  ip('link', 'add', veth, 'netns', NODE_NETNS, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns);
  ip('-n', NODE_NETNS, 'link', 'set', veth, 'master', BRIDGE, 'up');
  ip('-n', netns, 'link', 'set', 'lo', 'up');
  ip('-n', netns, 'addr', 'add', `${addr}/16`, 'dev', 'eth0');
  ip('-n', netns, 'link', 'set', 'eth0', 'up');
  ip('-n', netns, 'route', 'add', 'default', 'via', NODE_IP);
}

export function deletePodNetwork(netns: string): void {
  try {
    ip('-n', NODE_NETNS, 'link', 'del', vethName(netns));
  } catch {
    /* gone with the namespace */
  }
  try {
    ip('netns', 'del', netns);
  } catch {
    /* not there */
  }
}
