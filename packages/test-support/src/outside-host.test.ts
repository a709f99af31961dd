// The outside host, as root: made beside a gateway namespace of the test's own, reachable from it at
// 203.0.113.10, its app's log kept, and gone (namespace and veth) after remove().
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createOutsideHost, OUTSIDE_IP, type OutsideHost } from './outside-host.js';

const asRoot = process.getuid?.() === 0;
const tag = randomBytes(3).toString('hex');
const gw = `mm-oh-gw-${tag}`;

const APP = `require('node:net').createServer((s) => { console.log('TCP from ' + s.remoteAddress); s.end('hi\\n'); })
  .listen(9000, '0.0.0.0', () => console.log('listening'));`;

/** Connects from the gateway namespace to ip:port and returns what it read. */
function readFrom(ip: string, port: number): string {
  const script = `const s = require('node:net').connect(${port}, '${ip}'); let b = ''; s.on('data', (d) => (b += d));
    s.on('end', () => { process.stdout.write(b); }); s.on('error', (e) => { process.stdout.write('ERR ' + e.code); });
    s.setTimeout(3000, () => { process.stdout.write('TIMEOUT'); s.destroy(); });`;
  return execFileSync('ip', ['netns', 'exec', gw, process.execPath, '-e', script], { encoding: 'utf8' });
}

describe.skipIf(!asRoot)('outside host (root)', () => {
  let host: OutsideHost | undefined;
  afterAll(() => {
    host?.remove();
    spawnSync('ip', ['netns', 'del', gw]);
  });

  it('answers from 203.0.113.10 through the gateway namespace, logs what reached it, and is gone after remove()', async () => {
    execFileSync('ip', ['netns', 'add', gw]);
    execFileSync('ip', ['-n', gw, 'link', 'set', 'lo', 'up']);
    host = await createOutsideHost({ gatewayNetns: gw, tag, app: APP });
    expect(readFrom(OUTSIDE_IP, 9000)).toBe('hi\n');
    const h = host;
    await expect.poll(() => h.log(), { timeout: 3000 }).toMatch(/TCP from 203\.0\.113\.1\b/);
    host.remove();
    host = undefined;
    expect(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })).not.toContain(`mm-outside-${tag}`);
    expect(execFileSync('ip', ['-n', gw, '-o', 'link'], { encoding: 'utf8' })).not.toContain(`mmo${tag}g`);
    expect(readFrom(OUTSIDE_IP, 9000)).toMatch(/^ERR (ENETUNREACH|EHOSTUNREACH)|TIMEOUT/);
  }, 30_000);

  it('refuses a tag that cannot name an interface, before touching anything', async () => {
    await expect(createOutsideHost({ gatewayNetns: gw, tag: 'Too-Long-Tag', app: APP })).rejects.toThrow(
      /tag "Too-Long-Tag"/,
    );
  });
});
