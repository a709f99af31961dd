// Runs the built minimesh-identity binary (dist/main.js) and finds its ports in its JSON logs.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const BINARY = fileURLToPath(new URL('../../dist/main.js', import.meta.url));

export interface RunningIdentity {
  child: ChildProcess;
  grpcPort: number;
  adminPort: number;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  stop(): Promise<void>;
}

export function runBinary(
  args: string[],
  timeoutMs = 20_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runBinaryEnv(args, {}, timeoutMs);
}

/** Like runBinary, with extra environment variables (an empty string unsets one). */
export function runBinaryEnv(
  args: string[],
  env: Record<string, string>,
  timeoutMs = 20_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const merged: NodeJS.ProcessEnv = { ...process.env };
  for (const [k, v] of Object.entries(env)) {
    if (v === '') delete merged[k];
    else merged[k] = v;
  }
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BINARY, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: merged });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr += String(d)));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`minimesh-identity did not exit within ${timeoutMs}ms:\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * Starts the binary (dist/main.js, or another build of it such as the bundle's main.mjs) with
 * --addr/--admin-addr on 127.0.0.1:0 and JSON logs; resolves once both servers listen.
 */
export function startBinary(args: string[], timeoutMs = 20_000, binary = BINARY): Promise<RunningIdentity> {
  const child = spawn(
    process.execPath,
    [binary, '--addr', '127.0.0.1:0', '--admin-addr', '127.0.0.1:0', '--log-format', 'json', ...args],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let grpcPort = 0;
  let adminPort = 0;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`minimesh-identity did not start within ${timeoutMs}ms:\n${out}`));
    }, timeoutMs);
    const onData = (d: Buffer): void => {
      out += String(d);
      for (const line of out.split('\n')) {
        if (!line.startsWith('{')) continue;
        try {
          const rec = JSON.parse(line) as { msg?: string; port?: number; addr?: string };
          if (rec.msg === 'identity gRPC server listening' && rec.port) grpcPort = rec.port;
          if (rec.msg === 'admin server listening' && rec.addr) adminPort = Number(rec.addr.split(':').pop());
        } catch {
          /* partial line */
        }
      }
      if (grpcPort && adminPort) {
        clearTimeout(timer);
        resolve({
          child,
          grpcPort,
          adminPort,
          output: () => out,
          stop: () =>
            new Promise<void>((res) => {
              if (child.exitCode !== null) return res();
              child.once('exit', () => res());
              child.kill('SIGTERM');
              setTimeout(() => child.kill('SIGKILL'), 3000).unref();
            }),
        });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (!grpcPort || !adminPort) reject(new Error(`minimesh-identity exited (${code}) before listening:\n${out}`));
    });
  });
}
