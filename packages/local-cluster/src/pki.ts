// The cluster's certificates, made once with openssl: a CA, the serving certificates of kube-apiserver
// and the kubelet, client certificates for the admin, kube-controller-manager, kube-scheduler, the
// kubelet (system:node:<node>), kube-proxy and kube-apiserver's calls to the kubelet, and the
// service-account signing key.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { KUBERNETES_SERVICE_IP, NODE_IP, NODE_NAME, type StatePaths } from './paths.js';

const DAYS = '3650';

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function ecKey(path: string): void {
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', path]);
}

interface LeafOptions {
  name: string;
  subject: string;
  extensions: string;
}

function leaf(pki: string, opts: LeafOptions): void {
  const key = join(pki, `${opts.name}.key`);
  const csr = join(pki, `${opts.name}.csr`);
  const ext = join(pki, `${opts.name}.ext`);
  ecKey(key);
  openssl(['req', '-new', '-key', key, '-subj', opts.subject, '-out', csr]);
  writeFileSync(ext, opts.extensions);
  openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    join(pki, 'ca.crt'),
    '-CAkey',
    join(pki, 'ca.key'),
    '-CAcreateserial',
    '-days',
    DAYS,
    '-sha256',
    '-extfile',
    ext,
    '-out',
    join(pki, `${opts.name}.crt`),
  ]);
}

const CLIENT_EXT =
  'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n';

/** Creates every certificate and key the cluster needs, unless they already exist. */
export function ensurePki(paths: StatePaths): void {
  const pki = paths.pki;
  if (existsSync(join(pki, 'done'))) return;
  mkdirSync(pki, { recursive: true, mode: 0o700 });
  ecKey(join(pki, 'ca.key'));
  openssl([
    'req',
    '-x509',
    '-new',
    '-key',
    join(pki, 'ca.key'),
    '-subj',
    '/CN=minimesh-local-cluster-ca',
    '-days',
    DAYS,
    '-sha256',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
    '-out',
    join(pki, 'ca.crt'),
  ]);
  const sans = [
    'IP:127.0.0.1',
    `IP:${NODE_IP}`,
    `IP:${KUBERNETES_SERVICE_IP}`,
    'DNS:localhost',
    'DNS:kubernetes',
    'DNS:kubernetes.default',
    'DNS:kubernetes.default.svc',
    'DNS:kubernetes.default.svc.cluster.local',
  ].join(',');
  leaf(pki, {
    name: 'apiserver',
    subject: '/CN=kube-apiserver',
    extensions: `basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=${sans}\n`,
  });
  leaf(pki, { name: 'admin', subject: '/O=system:masters/CN=minimesh-admin', extensions: CLIENT_EXT });
  leaf(pki, { name: 'kube-controller-manager', subject: '/CN=system:kube-controller-manager', extensions: CLIENT_EXT });
  leaf(pki, { name: 'kube-scheduler', subject: '/CN=system:kube-scheduler', extensions: CLIENT_EXT });
  leaf(pki, { name: 'kube-proxy', subject: '/CN=system:kube-proxy', extensions: CLIENT_EXT });
  // The kubelet's client identity, as the Node authorizer and NodeRestriction expect it.
  leaf(pki, { name: 'kubelet-client', subject: `/O=system:nodes/CN=system:node:${NODE_NAME}`, extensions: CLIENT_EXT });
  leaf(pki, {
    name: 'kubelet',
    subject: `/CN=${NODE_NAME}`,
    extensions: `basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:${NODE_IP},DNS:${NODE_NAME}\n`,
  });
  // kube-apiserver → kubelet (logs, exec, port-forward, proxy): the kubelet's webhook authorizer allows system:masters.
  leaf(pki, {
    name: 'apiserver-kubelet-client',
    subject: '/O=system:masters/CN=kube-apiserver-kubelet-client',
    extensions: CLIENT_EXT,
  });
  // kube-apiserver → etcd is plain http on the node namespace's loopback; kube-apiserver → webhooks uses caBundle.
  ecKey(join(pki, 'sa.key'));
  openssl(['ec', '-in', join(pki, 'sa.key'), '-pubout', '-out', join(pki, 'sa.pub')]);
  writeFileSync(join(pki, 'done'), 'ok\n');
}
