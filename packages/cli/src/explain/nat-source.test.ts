import { describe, expect, it } from 'vitest';
import { execNatSource, kubectlDebugHint, type ExecInPod } from './nat-source.js';

function fakeExec(answers: Record<string, { code: number; stdout?: string; stderr?: string }>): {
  exec: ExecInPod;
  calls: string[];
} {
  const calls: string[] = [];
  const exec: ExecInPod = async (ns, pod, argv) => {
    calls.push(`${ns}/${pod}: ${argv.join(' ')}`);
    const a = answers[argv[0] as string] ?? { code: 127, stderr: `${argv[0]}: not found` };
    return { code: a.code, stdout: a.stdout ?? '', stderr: a.stderr ?? '' };
  };
  return { exec, calls };
}

describe('execNatSource', () => {
  it('prefers the backend whose table shows proxy-init chains (nft mode)', async () => {
    const { exec, calls } = fakeExec({
      'iptables-legacy-save': { code: 0, stdout: '*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n' },
      'iptables-nft-save': { code: 0, stdout: '*nat\n:PROXY_INIT_OUTPUT - [0:0]\nCOMMIT\n' },
    });
    expect(await execNatSource(exec, 'test').read('shop', 'web')).toContain('PROXY_INIT_OUTPUT');
    expect(calls).toEqual(['shop/web: iptables-legacy-save -t nat', 'shop/web: iptables-nft-save -t nat']);
  });
  it('falls back to the first table that could be read', async () => {
    const { exec } = fakeExec({ 'iptables-nft-save': { code: 0, stdout: '*nat\nCOMMIT\n' } });
    expect(await execNatSource(exec, 'test').read('shop', 'web')).toBe('*nat\nCOMMIT\n');
  });
  it('names every failure when nothing could be read', async () => {
    const { exec } = fakeExec({});
    await expect(execNatSource(exec, 'test').read('shop', 'web')).rejects.toThrow(
      /cannot read the nat table of shop\/web: iptables-legacy-save: exit 127 \(iptables-legacy-save: not found\); iptables-nft-save/,
    );
  });
  it('reads ip6tables for IPv6', async () => {
    const { exec, calls } = fakeExec({
      'ip6tables-legacy-save': { code: 0, stdout: '*nat\n:PROXY_INIT_OUTPUT - [0:0]\nCOMMIT\n' },
    });
    await execNatSource(exec, 'test').read('shop', 'web', 6);
    expect(calls).toEqual(['shop/web: ip6tables-legacy-save -t nat']);
  });
  it("prints the seed's kubectl debug way in", () => {
    expect(kubectlDebugHint('shop', 'web-1', 'minimesh-proxy')).toMatch(
      /^kubectl debug -n shop web-1 -i --quiet --image=ubuntu:22\.04 --target=minimesh-proxy --profile=netadmin -- .*iptables-legacy-save -t nat' > web-1\.nat$/,
    );
  });
});
