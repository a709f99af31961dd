// The built `minimesh explain` offline (--nat-file, no cluster), with and without a destination to
// ask (a fake one speaking the real proto on loopback), and its bad-input exits.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Server, ServerCredentials, type ServerWritableStream } from '@grpc/grpc-js';
import { destination, toTcpAddress } from '@minimesh/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const bin = join(here, '..', 'dist', 'main.js');
const golden = join(here, '..', '..', 'proxy-init', 'src', 'testdata', 'linkerd-args-nat.restore');
const work = mkdtempSync(join(tmpdir(), 'mm-cli-explain-'));
// No kubeconfig anywhere: HOME without ~/.kube, no local cluster state dir.
const env = { ...process.env, HOME: work, KUBECONFIG: '', MINIMESH_CLUSTER_DIR: join(work, 'no-cluster') };

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}

const ID = 'web.shop.serviceaccount.identity.minimesh.cluster.local';
const server = new Server();
let dstAddr = '';

beforeAll(async () => {
  const weighted = (ip: string): destination.WeightedAddr => ({
    addr: toTcpAddress(ip, 8080),
    weight: 10000,
    metricLabels: {},
    tlsIdentity: { strategy: { $case: 'dnsLikeIdentity', value: { name: ID } } },
  });
  server.addService(destination.DestinationService, {
    get(call: ServerWritableStream<destination.GetDestination, destination.Update>) {
      if (call.request.path === 'web.shop.svc.cluster.local:80')
        call.write({
          update: { $case: 'add', value: { addrs: [weighted('10.23.0.8'), weighted('10.23.0.9')], metricLabels: {} } },
        });
      else call.write({ update: { $case: 'noEndpoints', value: { exists: false } } });
    },
    getProfile(call: ServerWritableStream<destination.GetDestination, destination.DestinationProfile>) {
      call.write({
        routes: [],
        dstOverrides: [],
        opaqueProtocol: false,
        fullyQualifiedName: call.request.path === '10.247.0.10:80' ? 'web.shop.svc.cluster.local' : '',
      });
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  dstAddr = `127.0.0.1:${port}`;
});

afterAll(() => {
  server.forceShutdown();
  rmSync(work, { recursive: true, force: true });
});

describe('minimesh explain --nat-file', () => {
  it('outbound to a ClusterIP, asking destination: numbered lines end in mTLS to two meshed endpoints', async () => {
    const r = await run([
      'explain',
      'shop/client',
      '--nat-file',
      golden,
      '--to',
      '10.247.0.10:80',
      '--uid',
      '1000',
      '--destination-addr',
      dstAddr,
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toBe("shop/client: redirected to the proxy's outbound listener 127.0.0.1:4140");
    expect(lines).toContain(
      "3. uid 1000 is not the proxy's uid 2102: PROXY_INIT_OUTPUT rule 1 (proxy-init/ignore-proxy-user-id) does not match.",
    );
    expect(r.stdout).toMatch(
      /7\. REDIRECT to 127\.0\.0\.1:4140: .*original destination 10\.247\.0\.10:80 with SO_ORIGINAL_DST/,
    );
    expect(r.stdout).toContain(
      `Destination answers for web.shop.svc.cluster.local:80: 2 endpoints (10.23.0.8:8080, 10.23.0.9:8080), both meshed (identity ${ID}) → mTLS`,
    );
    expect(r.stdout).toMatch(/Notes:\n- pod shop\/client not read/);
  });

  it('a destination that is not there is reported, not fatal', async () => {
    const r = await run([
      'explain',
      'shop/client',
      '--nat-file',
      golden,
      '--to',
      'web.shop.svc.cluster.local:80',
      '--destination-addr',
      '127.0.0.1:1',
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /Destination could not be asked \(destination 127\.0\.0\.1:1 Get web\.shop\.svc\.cluster\.local:80: /,
    );
  });

  it('--json carries the steps and the outcome', async () => {
    const r = await run(['explain', 'shop/client', '--nat-file', golden, '--port', '4191', '--json']);
    expect(r.code).toBe(0);
    const e = JSON.parse(r.stdout) as { outcome: string; direction: string; natSource: string; lines: string[] };
    expect(e).toMatchObject({ outcome: 'not-redirected', direction: 'inbound', natSource: `file ${golden}` });
    expect(e.lines[0]).toMatch(/^1\. /);
  });

  it('a missing nat file exits 1 naming it', async () => {
    const r = await run(['explain', 'shop/client', '--nat-file', join(work, 'none.nat'), '--port', '80']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`--nat-file ${join(work, 'none.nat')}: ENOENT`);
  });

  it('reads a saved table with other tables and counters', async () => {
    const file = join(work, 'live.nat');
    writeFileSync(
      file,
      `*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n*nat\n:PREROUTING ACCEPT [1:60]\n:OUTPUT ACCEPT [1:60]\n:PROXY_INIT_REDIRECT - [0:0]\n-A PREROUTING -m comment --comment "proxy-init/install-proxy-init-prerouting" -j PROXY_INIT_REDIRECT\n-A PROXY_INIT_REDIRECT -p tcp -m tcp --dport 9090 -m comment --comment "proxy-init/redirect-port-9090-to-proxy-port" -j REDIRECT --to-ports 4143\nCOMMIT\n`,
    );
    const inside = await run(['explain', 'shop/client', '--nat-file', file, '--port', '9090']);
    expect(inside.stdout).toContain("redirected to the proxy's inbound listener on port 4143");
    const outside = await run(['explain', 'shop/client', '--nat-file', file, '--port', '8080']);
    expect(outside.stdout).toContain(
      'Port 8080 is not 9090: PROXY_INIT_REDIRECT rule 1 (proxy-init/redirect-port-9090-to-proxy-port) does not match.',
    );
    expect(outside.stdout).toContain('not redirected');
  });

  it.each([
    [['explain'], /expected one <namespace>\/<pod>, got 0 arguments/],
    [['explain', 'web'], /"web" is not valid: expected <namespace>\/<pod>/],
    [['explain', 'shop/web', '--port', 'http'], /--port "http" is not valid: expected a number from 1 to 65535/],
    [['explain', 'shop/web', '--to', 'web'], /--to "web" is not valid: expected HOST:PORT/],
    [
      ['explain', 'shop/web', '--to', 'web:80', '--port', '80'],
      /--port \(inbound\) and --to \(outbound\) exclude each other/,
    ],
    [['explain', 'shop/web', '--from', 'me'], /--from "me" is not valid: expected an IP address/],
    [['explain', 'shop/web', '--bogus'], /bogus/],
    [['check', '--namespace', 'Bad_NS'], /--namespace "Bad_NS" is not valid/],
    [['check', '--warn-days', 'soon'], /--warn-days "soon" is not valid/],
  ])('exits 2 with one line: %j', async (args, message) => {
    const r = await run(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).not.toMatch(/^minimesh: minimesh/);
  });

  it('--help for explain and check', async () => {
    const e = await run(['explain', '--help']);
    expect(e.code).toBe(0);
    expect(e.stdout).toContain('--nat-file');
    const c = await run(['check', '--help']);
    expect(c.code).toBe(0);
    expect(c.stdout).toContain('--namespace');
    const top = await run(['--help']);
    expect(top.stdout).toMatch(/explain .*\n.*check /s);
  });
});
