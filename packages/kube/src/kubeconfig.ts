// Where a program finds its API server and credentials: the one loader, with one precedence.
//
//   1. the --kubeconfig flag (a file; an error if it cannot be used),
//   2. $KUBECONFIG (one or more files separated by ':', merged as kubectl merges them),
//   3. in cluster: $KUBERNETES_SERVICE_HOST/_PORT and the pod's service-account token, CA and namespace,
//   4. ~/.kube/config,
//   5. the caller's own fallbacks (the CLI adds the local cluster's admin kubeconfig),
// else a KubeConfigError naming everything that was tried.
//
// The kubeconfig fields read are those of clientcmd (clusters, users, contexts, current-context):
// server, certificate-authority(-data), insecure-skip-tls-verify, tls-server-name, proxy-url;
// client-certificate(-data), client-key(-data), token, tokenFile, username/password, exec; namespace.
// Relative paths are resolved against the directory of the file that names them, as kubectl does.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { KubeConfigError } from './errors.js';

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** A credential plugin (users[].user.exec), as client.authentication.k8s.io defines it. */
export interface ExecSpec {
  command: string;
  args: string[];
  env: Array<{ name: string; value: string }>;
  apiVersion: string;
  /** Shown when the command is not installed. */
  installHint?: string;
  /** The kubeconfig's directory: a relative command is resolved against it. */
  dir: string;
}

export type AuthSpec =
  | { kind: 'none' }
  | { kind: 'token'; token: string }
  /** Read again at most every minute: in a pod the kubelet rotates the projected token. */
  | { kind: 'token-file'; path: string }
  | { kind: 'basic'; username: string; password: string }
  | { kind: 'exec'; exec: ExecSpec };

export interface KubeConfig {
  /** How it was found, for messages: "--kubeconfig /x", "$KUBECONFIG", "in-cluster", "~/.kube/config". */
  source: string;
  /** The file(s) read; empty in cluster. */
  files: string[];
  /** "https://10.96.0.1:443", no trailing slash. */
  server: string;
  tls: {
    ca?: Buffer;
    cert?: Buffer;
    key?: Buffer;
    insecureSkipTlsVerify: boolean;
    servername?: string;
  };
  auth: AuthSpec;
  /** The context's namespace, or the pod's own namespace in cluster. */
  namespace: string | undefined;
  proxyUrl?: string;
}

export interface LoadKubeConfigOptions {
  /** The --kubeconfig flag's value; undefined or '' when not given. */
  path?: string | undefined;
  /** The context to use instead of current-context. */
  context?: string | undefined;
  env?: NodeJS.ProcessEnv;
  /** Where the pod's service-account files are (tests point it elsewhere). */
  serviceAccountDir?: string;
  /** The home directory whose .kube/config is tried (default: os.homedir()). */
  home?: string;
  /** Files tried last, in order, when nothing else is configured. */
  fallbacks?: readonly string[];
}

/** Loads the configuration by the precedence above. Throws KubeConfigError (exit code 2) with one line. */
export async function loadKubeConfig(opts: LoadKubeConfigOptions = {}): Promise<KubeConfig> {
  const env = opts.env ?? process.env;
  if (opts.path) return fromFiles([opts.path], `--kubeconfig ${opts.path}`, opts.context);
  const list = (env.KUBECONFIG ?? '').split(':').filter((p) => p !== '');
  if (list.length > 0) {
    const present = list.filter((p) => existsSync(p));
    if (present.length === 0) throw new KubeConfigError(`$KUBECONFIG (${env.KUBECONFIG}): none of its files exists`);
    return fromFiles(present, `$KUBECONFIG (${present.join(':')})`, opts.context);
  }
  if (env.KUBERNETES_SERVICE_HOST) return inCluster(env, opts.serviceAccountDir ?? SERVICE_ACCOUNT_DIR);
  const home = join(opts.home ?? homedir(), '.kube', 'config');
  if (existsSync(home)) return fromFiles([home], home, opts.context);
  for (const f of opts.fallbacks ?? []) if (existsSync(f)) return fromFiles([f], f, opts.context);
  const tried = [
    '--kubeconfig',
    '$KUBECONFIG',
    'in-cluster ($KUBERNETES_SERVICE_HOST is unset)',
    home,
    ...(opts.fallbacks ?? []),
  ];
  throw new KubeConfigError(`no Kubernetes configuration found: tried ${tried.join(', ')}`);
}

/** The in-cluster configuration: the API server's service address and the pod's service account. */
export async function inCluster(env: NodeJS.ProcessEnv, dir: string = SERVICE_ACCOUNT_DIR): Promise<KubeConfig> {
  const host = env.KUBERNETES_SERVICE_HOST ?? '';
  const port = env.KUBERNETES_SERVICE_PORT ?? '443';
  if (host === '') throw new KubeConfigError('in-cluster: $KUBERNETES_SERVICE_HOST is unset');
  const tokenPath = join(dir, 'token');
  let ca: Buffer;
  try {
    ca = await readFile(join(dir, 'ca.crt'));
    await readFile(tokenPath);
  } catch (err) {
    throw new KubeConfigError(
      `in-cluster: cannot read the service account (${(err as NodeJS.ErrnoException).code ?? (err as Error).message} in ${dir})`,
      { cause: err },
    );
  }
  const namespace = await readFile(join(dir, 'namespace'), 'utf8').then(
    (t) => t.trim(),
    () => undefined,
  );
  return {
    source: 'in-cluster',
    files: [],
    server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    tls: { ca, insecureSkipTlsVerify: false },
    auth: { kind: 'token-file', path: tokenPath },
    namespace,
  };
}

/** Parses kubeconfig text (YAML or JSON); `file` names it in errors and anchors relative paths. */
export async function parseKubeConfig(text: string, file: string, context?: string): Promise<KubeConfig> {
  return fromDocs([{ file, doc: await parseYaml(text, file) }], file, context);
}

type Doc = Record<string, unknown>;
type Named = { name?: unknown; [k: string]: unknown };

async function parseYaml(text: string, file: string): Promise<Doc> {
  // Loaded on demand: a pod in cluster never reads YAML, and the parser is the biggest module here.
  // (A CommonJS module: its exports are the default export both in Node and in a bundle's chunk.)
  const yaml = await import('yaml');
  const { parse } = ((yaml as unknown as { default?: typeof yaml }).default ?? yaml) as typeof yaml;
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw new KubeConfigError(`${file}: not valid YAML: ${(err as Error).message.split('\n')[0]}`, { cause: err });
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc))
    throw new KubeConfigError(`${file}: not a kubeconfig (expected a mapping)`);
  return doc as Doc;
}

async function fromFiles(files: string[], source: string, context?: string): Promise<KubeConfig> {
  const docs: Array<{ file: string; doc: Doc }> = [];
  for (const f of files) {
    let text: string;
    try {
      text = await readFile(f, 'utf8');
    } catch (err) {
      throw new KubeConfigError(
        `${source}: cannot read ${f} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
        {
          cause: err,
        },
      );
    }
    docs.push({ file: f, doc: await parseYaml(text, f) });
  }
  return fromDocs(docs, source, context);
}

/** First file to define a name wins, as kubectl merges $KUBECONFIG. */
function lookup(
  docs: Array<{ file: string; doc: Doc }>,
  section: string,
  name: string,
): { item: Doc; file: string } | undefined {
  for (const { file, doc } of docs) {
    const list = doc[section];
    if (!Array.isArray(list)) continue;
    const hit = (list as Named[]).find((e) => e && e.name === name);
    if (hit) {
      const inner = hit[section.slice(0, -1)];
      return { item: inner && typeof inner === 'object' ? (inner as Doc) : {}, file };
    }
  }
  return undefined;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

async function fromDocs(
  docs: Array<{ file: string; doc: Doc }>,
  source: string,
  contextName?: string,
): Promise<KubeConfig> {
  const current = contextName ?? docs.map((d) => str(d.doc['current-context'])).find((c) => c !== undefined);
  if (!current) throw new KubeConfigError(`${source}: no current-context (and no --context)`);
  const ctx = lookup(docs, 'contexts', current);
  if (!ctx) throw new KubeConfigError(`${source}: context "${current}" is not defined`);
  const clusterName = str(ctx.item.cluster);
  const cluster = clusterName ? lookup(docs, 'clusters', clusterName) : undefined;
  if (!cluster)
    throw new KubeConfigError(
      `${source}: context "${current}" names cluster "${clusterName ?? ''}", which is not defined`,
    );
  const server = str(cluster.item.server);
  if (!server) throw new KubeConfigError(`${source}: cluster "${clusterName}" has no server`);
  let url: URL;
  try {
    url = new URL(server);
  } catch (err) {
    throw new KubeConfigError(`${source}: cluster "${clusterName}": server "${server}" is not a URL`, { cause: err });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new KubeConfigError(`${source}: cluster "${clusterName}": server "${server}" is not an http(s) URL`);
  const userName = str(ctx.item.user);
  const user = userName ? lookup(docs, 'users', userName) : undefined;
  if (userName && !user)
    throw new KubeConfigError(`${source}: context "${current}" names user "${userName}", which is not defined`);
  const u = user?.item ?? {};
  const rel = (file: string, p: string): string => (isAbsolute(p) ? p : resolve(dirname(file), p));

  const bytes = async (
    item: Doc,
    file: string,
    dataKey: string,
    pathKey: string,
    what: string,
  ): Promise<Buffer | undefined> => {
    const data = str(item[dataKey]);
    if (data) return Buffer.from(data, 'base64');
    const p = str(item[pathKey]);
    if (!p) return undefined;
    try {
      return await readFile(rel(file, p));
    } catch (err) {
      throw new KubeConfigError(
        `${source}: ${what} ${rel(file, p)}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
        {
          cause: err,
        },
      );
    }
  };

  const tls: KubeConfig['tls'] = { insecureSkipTlsVerify: cluster.item['insecure-skip-tls-verify'] === true };
  const ca = await bytes(
    cluster.item,
    cluster.file,
    'certificate-authority-data',
    'certificate-authority',
    'certificate-authority',
  );
  if (ca) tls.ca = ca;
  const servername = str(cluster.item['tls-server-name']);
  if (servername) tls.servername = servername;
  if (user) {
    const cert = await bytes(u, user.file, 'client-certificate-data', 'client-certificate', 'client-certificate');
    const key = await bytes(u, user.file, 'client-key-data', 'client-key', 'client-key');
    if ((cert === undefined) !== (key === undefined))
      throw new KubeConfigError(
        `${source}: user "${userName}" has a client ${cert ? 'certificate without a key' : 'key without a certificate'}`,
      );
    if (cert) tls.cert = cert;
    if (key) tls.key = key;
  }

  let auth: AuthSpec = { kind: 'none' };
  const token = str(u.token);
  const tokenFile = str(u.tokenFile);
  const exec = u.exec && typeof u.exec === 'object' ? (u.exec as Doc) : undefined;
  if (token) auth = { kind: 'token', token };
  else if (tokenFile && user) auth = { kind: 'token-file', path: rel(user.file, tokenFile) };
  else if (exec && user) {
    const command = str(exec.command);
    if (!command) throw new KubeConfigError(`${source}: user "${userName}": exec has no command`);
    auth = {
      kind: 'exec',
      exec: {
        command,
        args: Array.isArray(exec.args) ? exec.args.map(String) : [],
        env: Array.isArray(exec.env)
          ? (exec.env as Doc[]).map((e) => ({ name: String(e?.name ?? ''), value: String(e?.value ?? '') }))
          : [],
        apiVersion: str(exec.apiVersion) ?? 'client.authentication.k8s.io/v1',
        ...(str(exec.installHint) ? { installHint: str(exec.installHint) as string } : {}),
        dir: dirname(user.file),
      },
    };
  } else if (str(u.username) && str(u.password))
    auth = { kind: 'basic', username: str(u.username) as string, password: str(u.password) as string };
  else if (u['auth-provider'])
    throw new KubeConfigError(
      `${source}: user "${userName}" uses an auth-provider, which Kubernetes removed in 1.26; use an exec credential plugin`,
    );

  const proxyUrl = str(cluster.item['proxy-url']);
  return {
    source,
    files: docs.map((d) => d.file),
    server: server.replace(/\/+$/, ''),
    tls,
    auth,
    namespace: str(ctx.item.namespace),
    ...(proxyUrl ? { proxyUrl } : {}),
  };
}
