// The loader's precedence (flag, $KUBECONFIG, in-cluster, ~/.kube/config, fallbacks) and the fields it reads.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { KubeConfigError } from './errors.js';
import { loadKubeConfig, parseKubeConfig } from './kubeconfig.js';

const dir = mkdtempSync(join(tmpdir(), 'mm-kubeconfig-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function kubeconfig(
  name: string,
  server: string,
  user: Record<string, unknown> = { token: `tok-${name}` },
  extra = '',
): string {
  const file = join(dir, name);
  writeFileSync(
    file,
    `apiVersion: v1
kind: Config
clusters:
- name: c-${name}
  cluster:
    server: ${server}
    certificate-authority: ca-${name}.pem
contexts:
- name: ctx-${name}
  context: {cluster: c-${name}, user: u-${name}, namespace: ns-${name}}
users:
- name: u-${name}
  user: ${JSON.stringify(user)}
current-context: ctx-${name}
${extra}`,
  );
  writeFileSync(join(dir, `ca-${name}.pem`), `CA of ${name}`);
  return file;
}

const flagFile = kubeconfig('flag', 'https://flag.example:6443/');
const envFile = kubeconfig('env', 'https://env.example:6443');
const home = join(dir, 'home');
mkdirSync(join(home, '.kube'), { recursive: true });
writeFileSync(
  join(home, '.kube', 'config'),
  `
apiVersion: v1
clusters: [{name: h, cluster: {server: "https://home.example", insecure-skip-tls-verify: true}}]
contexts: [{name: h, context: {cluster: h, user: h}}]
users: [{name: h, user: {username: admin, password: secret}}]
current-context: h
`,
);
const sa = join(dir, 'sa');
mkdirSync(sa);
writeFileSync(join(sa, 'token'), 'sa-token\n');
writeFileSync(join(sa, 'ca.crt'), 'cluster CA');
writeFileSync(join(sa, 'namespace'), 'minimesh\n');
const inPod = { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' };

describe('loadKubeConfig precedence', () => {
  it('1. the flag wins over everything', async () => {
    const c = await loadKubeConfig({
      path: flagFile,
      env: { ...inPod, KUBECONFIG: envFile },
      serviceAccountDir: sa,
      home,
    });
    expect(c).toMatchObject({
      source: `--kubeconfig ${flagFile}`,
      server: 'https://flag.example:6443',
      namespace: 'ns-flag',
    });
    expect(c.auth).toEqual({ kind: 'token', token: 'tok-flag' });
    expect(c.tls.ca?.toString()).toBe('CA of flag'); // relative to the kubeconfig's directory
  });

  it('2. then $KUBECONFIG, even in a pod', async () => {
    const c = await loadKubeConfig({ env: { ...inPod, KUBECONFIG: envFile }, serviceAccountDir: sa, home });
    expect(c.server).toBe('https://env.example:6443');
    expect(c.source).toBe(`$KUBECONFIG (${envFile})`);
  });

  it('3. then the in-cluster service account', async () => {
    const c = await loadKubeConfig({ env: inPod, serviceAccountDir: sa, home });
    expect(c).toMatchObject({ source: 'in-cluster', server: 'https://10.96.0.1:443', namespace: 'minimesh' });
    expect(c.auth).toEqual({ kind: 'token-file', path: join(sa, 'token') });
    expect(c.tls.ca?.toString()).toBe('cluster CA');
  });

  it('brackets an IPv6 service host', async () => {
    const c = await loadKubeConfig({
      env: { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '6443' },
      serviceAccountDir: sa,
    });
    expect(c.server).toBe('https://[fd00::1]:6443');
  });

  it('4. then ~/.kube/config, 5. then the fallbacks', async () => {
    const c = await loadKubeConfig({ env: {}, home });
    expect(c).toMatchObject({ server: 'https://home.example', tls: { insecureSkipTlsVerify: true } });
    expect(c.auth).toEqual({ kind: 'basic', username: 'admin', password: 'secret' });
    const f = await loadKubeConfig({ env: {}, home: join(dir, 'nohome'), fallbacks: [join(dir, 'missing'), envFile] });
    expect(f.server).toBe('https://env.example:6443');
  });

  it('says what it tried when nothing is configured (exit code 2)', async () => {
    const err = await loadKubeConfig({ env: {}, home: join(dir, 'nohome') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeConfigError);
    expect((err as KubeConfigError).exitCode).toBe(2);
    expect((err as Error).message).toBe(
      `no Kubernetes configuration found: tried --kubeconfig, $KUBECONFIG, in-cluster ($KUBERNETES_SERVICE_HOST is unset), ${join(dir, 'nohome', '.kube', 'config')}`,
    );
  });

  it('a flag naming a missing file is an error, not a fall-through', async () => {
    await expect(loadKubeConfig({ path: join(dir, 'nope'), env: inPod, serviceAccountDir: sa })).rejects.toThrow(
      `--kubeconfig ${join(dir, 'nope')}: cannot read ${join(dir, 'nope')} (ENOENT)`,
    );
  });

  it('in cluster without a service account names the directory', async () => {
    await expect(loadKubeConfig({ env: inPod, serviceAccountDir: join(dir, 'nosa') })).rejects.toThrow(
      `in-cluster: cannot read the service account (ENOENT in ${join(dir, 'nosa')})`,
    );
  });

  it('merges $KUBECONFIG files: the first to define a name or current-context wins', async () => {
    const second = kubeconfig('second', 'https://second.example', { token: 'x' });
    const c = await loadKubeConfig({ env: { KUBECONFIG: `${join(dir, 'absent')}:${envFile}:${second}` } });
    expect(c.server).toBe('https://env.example:6443');
    expect(c.files).toEqual([envFile, second]);
  });
});

describe('parseKubeConfig fields', () => {
  const text = (user: string, extra = '') => `
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: ${Buffer.from('CA').toString('base64')}, tls-server-name: api.local, proxy-url: "http://proxy:3128"}}]
contexts: [{name: x, context: {cluster: c, user: u}}, {name: y, context: {cluster: c, user: u, namespace: other}}]
users: [{name: u, user: ${user}}]
current-context: x
${extra}`;

  it('reads inline client certificates, tls-server-name and proxy-url', async () => {
    const b = (s: string) => Buffer.from(s).toString('base64');
    const c = await parseKubeConfig(
      text(`{client-certificate-data: ${b('CERT')}, client-key-data: ${b('KEY')}}`),
      '/k',
    );
    expect(c.tls).toMatchObject({ servername: 'api.local', insecureSkipTlsVerify: false });
    expect([c.tls.ca?.toString(), c.tls.cert?.toString(), c.tls.key?.toString()]).toEqual(['CA', 'CERT', 'KEY']);
    expect(c.proxyUrl).toBe('http://proxy:3128');
    expect(c.auth).toEqual({ kind: 'none' });
  });

  it('reads an exec plugin with its arguments and environment; --context picks another context', async () => {
    const c = await parseKubeConfig(
      text(
        '{exec: {apiVersion: client.authentication.k8s.io/v1, command: ./get-token, args: [--x], env: [{name: A, value: b}]}}',
      ),
      '/etc/kube/config',
      'y',
    );
    expect(c.auth).toEqual({
      kind: 'exec',
      exec: {
        command: './get-token',
        args: ['--x'],
        env: [{ name: 'A', value: 'b' }],
        apiVersion: 'client.authentication.k8s.io/v1',
        dir: '/etc/kube',
      },
    });
    expect(c.namespace).toBe('other');
  });

  it.each([
    ['not: [valid', /^\/k: not valid YAML/],
    ['clusters: []', /^\/k: no current-context/],
    ['current-context: x', /^\/k: context "x" is not defined/],
    [text('{client-key-data: eA==}'), /user "u" has a client key without a certificate/],
    [text('{auth-provider: {name: gcp}}'), /uses an auth-provider, which Kubernetes removed in 1.26/],
    [text('{}').replace('https://127.0.0.1:6443', 'ftp://x'), /server "ftp:\/\/x" is not an http\(s\) URL/],
  ])('refuses %j with one line', async (input, message) => {
    const err = await parseKubeConfig(input, '/k').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeConfigError);
    expect((err as Error).message).toMatch(message);
  });
});
