// Credentials at request time: a static token, a token file read again every minute (the kubelet
// rotates projected service-account tokens), basic auth, or an exec credential plugin whose answer
// is kept until its expirationTimestamp (or until the API server answers 401).
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import type { AuthSpec, ExecSpec } from './kubeconfig.js';
import { KubeError } from './errors.js';

export interface Credentials {
  /** The Authorization header value, if any. */
  authorization?: string;
  /** A client certificate from an exec plugin (overrides the kubeconfig's). */
  cert?: Buffer;
  key?: Buffer;
}

export interface CredentialSource {
  get(): Promise<Credentials>;
  /** The API server said 401: the next get() asks again (token file re-read, plugin re-run). */
  invalidate(): void;
}

const TOKEN_FILE_TTL_MS = 60_000;

export function createCredentialSource(spec: AuthSpec, now: () => number = Date.now): CredentialSource {
  switch (spec.kind) {
    case 'none':
      return { get: async () => ({}), invalidate: () => undefined };
    case 'token': {
      const creds = { authorization: `Bearer ${spec.token}` };
      return { get: async () => creds, invalidate: () => undefined };
    }
    case 'basic': {
      const creds = { authorization: `Basic ${Buffer.from(`${spec.username}:${spec.password}`).toString('base64')}` };
      return { get: async () => creds, invalidate: () => undefined };
    }
    case 'token-file': {
      let cached: { creds: Credentials; at: number } | undefined;
      let reading: Promise<Credentials> | undefined;
      const read = async (): Promise<Credentials> => {
        let text: string;
        try {
          text = await readFile(spec.path, 'utf8');
        } catch (err) {
          throw new KubeError(
            'MINIMESH_KUBE_AUTH',
            `token file ${spec.path}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
            { cause: err },
          );
        }
        const creds = { authorization: `Bearer ${text.trim()}` };
        cached = { creds, at: now() };
        return creds;
      };
      return {
        get() {
          if (cached && now() - cached.at < TOKEN_FILE_TTL_MS) return Promise.resolve(cached.creds);
          reading ??= read().finally(() => (reading = undefined));
          return reading;
        },
        invalidate: () => (cached = undefined),
      };
    }
    case 'exec':
      return execSource(spec.exec, now);
  }
}

interface ExecCredentialStatus {
  token?: string;
  clientCertificateData?: string;
  clientKeyData?: string;
  expirationTimestamp?: string;
}

function execSource(spec: ExecSpec, now: () => number): CredentialSource {
  let cached: { creds: Credentials; until: number } | undefined;
  let running: Promise<Credentials> | undefined;
  const run = async (): Promise<Credentials> => {
    const command =
      spec.command.includes('/') && !isAbsolute(spec.command) ? resolve(spec.dir, spec.command) : spec.command;
    const env = { ...process.env };
    for (const e of spec.env) env[e.name] = e.value;
    env.KUBERNETES_EXEC_INFO = JSON.stringify({
      apiVersion: spec.apiVersion,
      kind: 'ExecCredential',
      spec: { interactive: false },
    });
    const stdout = await new Promise<string>((ok, fail) => {
      execFile(command, spec.args, { env, timeout: 60_000, maxBuffer: 1 << 20 }, (err, out, errText) => {
        if (err) {
          const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
          fail(
            new KubeError(
              'MINIMESH_KUBE_AUTH',
              `credential plugin ${spec.command}: ${missing ? `not found${spec.installHint ? ` (${spec.installHint.trim().split('\n')[0]})` : ''}` : `${err.message.split('\n')[0]}${errText ? `: ${String(errText).trim().split('\n')[0]}` : ''}`}`,
              { cause: err },
            ),
          );
        } else ok(String(out));
      });
    });
    let status: ExecCredentialStatus | undefined;
    try {
      status = (JSON.parse(stdout) as { status?: ExecCredentialStatus }).status;
    } catch (err) {
      throw new KubeError('MINIMESH_KUBE_AUTH', `credential plugin ${spec.command}: its output is not JSON`, {
        cause: err,
      });
    }
    if (!status || (!status.token && !status.clientCertificateData))
      throw new KubeError(
        'MINIMESH_KUBE_AUTH',
        `credential plugin ${spec.command}: no token or client certificate in its status`,
      );
    const creds: Credentials = {};
    if (status.token) creds.authorization = `Bearer ${status.token}`;
    if (status.clientCertificateData && status.clientKeyData) {
      creds.cert = Buffer.from(status.clientCertificateData);
      creds.key = Buffer.from(status.clientKeyData);
    }
    const exp = status.expirationTimestamp ? Date.parse(status.expirationTimestamp) : NaN;
    cached = { creds, until: Number.isFinite(exp) ? exp - 10_000 : Number.POSITIVE_INFINITY };
    return creds;
  };
  return {
    get() {
      if (cached && now() < cached.until) return Promise.resolve(cached.creds);
      running ??= run().finally(() => (running = undefined));
      return running;
    },
    invalidate: () => (cached = undefined),
  };
}
