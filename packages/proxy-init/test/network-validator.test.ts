// The network validator for real: a fresh "pod" namespace whose default route leads to a peer
// namespace (as a pod's leads to its node), the validator run as an unprivileged uid. Without the
// rules its connection to the reserved address leaves for the peer, where nothing answers; with
// proxy-init's rules it is redirected to its own listener; as the proxy's uid it is not.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPair, type Pair } from './netns.js';

const VALIDATOR = fileURLToPath(new URL('../dist/network-validator.js', import.meta.url));
const SEED_ARGS = [
  '--ipv6=false',
  '--proxy-uid',
  '2102',
  '--inbound-ports-to-ignore',
  '4190,4191',
  '--outbound-ports-to-ignore',
  '443,6443',
  '--iptables-mode',
  'nft',
];

describe('minimesh-network-validator in a network namespace', () => {
  let pair: Pair;
  const validate = (uid: number) =>
    pair.exec(pair.pod, [
      'setpriv',
      `--reuid=${uid}`,
      `--regid=${uid}`,
      '--clear-groups',
      process.execPath,
      VALIDATOR,
      '--timeout',
      '2s',
    ]);

  beforeAll(async () => {
    pair = await createPair();
    const r = await pair.exec(pair.pod, ['ip', 'route', 'add', 'default', 'via', pair.peerIp]);
    expect(r.code, r.stderr).toBe(0);
  });
  afterAll(async () => {
    await pair?.destroy();
  });

  it('fails with the message when the pod has no rules', async () => {
    const r = await validate(65534);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stderr).toContain(
      "minimesh-network-validator: this pod's traffic is not redirected to the proxy: a connection to 192.0.2.2:20001 did not reach 127.0.0.1:4140 (no answer within 2000 ms)",
    );
  });

  it("passes once proxy-init's rules are in place", async () => {
    const init = await pair.proxyInit(SEED_ARGS);
    expect(init.code, init.stderr).toBe(0);
    const r = await validate(65534);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /traffic is redirected: a connection to 192\.0\.2\.2:20001 reached 127\.0\.0\.1:4140 in \d+ ms/,
    );
  });

  it("fails as the proxy's uid, whose traffic the rules let through", async () => {
    const r = await validate(2102);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stderr).toContain('is not redirected');
  });
});
