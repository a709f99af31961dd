// The linkerd2-proxy image of run B, made here without a registry or an engine.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

/**
 * An image of the linkerd2-proxy binary and the shared libraries ldd names for it (from this machine),
 * written as a docker-archive tar by hand (manifest.json, config, one layer) and imported into the node's
 * containerd with ctr, as the local cluster imports scripts/images.sh's tars. Nothing is pushed.
 */
export function buildLinkerdImage(
  binary: string,
  to: { containerdSocket: string } | { tarPath: string },
): { ref: string; imageId: string; bytes: number; files: string[] } {
  const bin = readFileSync(binary);
  const ref = `minimesh.local/linkerd2-proxy:${sha256(bin).slice(0, 12)}`;
  const dir = mkdtempSync(join(tmpdir(), 'mm-nodemem-image-'));
  try {
    const root = join(dir, 'root');
    const put = (from: string, to: string, mode: number) => {
      mkdirSync(dirname(join(root, to)), { recursive: true });
      copyFileSync(realpathSync(from), join(root, to));
      chmodSync(join(root, to), mode);
    };
    put(binary, 'usr/lib/linkerd/linkerd2-proxy', 0o755);
    const files = ['/usr/lib/linkerd/linkerd2-proxy'];
    for (const line of execFileSync('ldd', [binary], { encoding: 'utf8' }).split('\n')) {
      const lib = /=>\s+(\/\S+)/.exec(line)?.[1] ?? /^\s*(\/\S+)\s+\(/.exec(line)?.[1];
      if (!lib) continue;
      put(lib, lib.slice(1), 0o755);
      files.push(lib);
    }
    mkdirSync(join(root, 'tmp'), { mode: 0o1777 });
    chmodSync(join(root, 'tmp'), 0o1777);
    const layer = join(dir, 'layer.tar');
    execFileSync('tar', [
      '--sort=name',
      '--owner=0',
      '--group=0',
      '--numeric-owner',
      '--mtime=@0',
      '-C',
      root,
      '-cf',
      layer,
      '.',
    ]);
    const diffId = sha256(readFileSync(layer));
    const config = JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      created: '1970-01-01T00:00:00Z',
      config: { Entrypoint: ['/usr/lib/linkerd/linkerd2-proxy'], User: '2102' },
      rootfs: { type: 'layers', diff_ids: [`sha256:${diffId}`] },
      history: [
        { created: '1970-01-01T00:00:00Z', created_by: 'bench/proxy-node: linkerd2-proxy and its shared libraries' },
      ],
    });
    const configId = sha256(config);
    const arch = join(dir, 'archive');
    mkdirSync(join(arch, diffId), { recursive: true });
    copyFileSync(layer, join(arch, diffId, 'layer.tar'));
    writeFileSync(join(arch, `${configId}.json`), config);
    writeFileSync(
      join(arch, 'manifest.json'),
      JSON.stringify([{ Config: `${configId}.json`, RepoTags: [ref], Layers: [`${diffId}/layer.tar`] }]),
    );
    const tar = join(dir, 'image.tar');
    execFileSync('tar', ['--owner=0', '--group=0', '--numeric-owner', '-C', arch, '-cf', tar, '.']);
    if ('tarPath' in to) copyFileSync(tar, to.tarPath);
    else execFileSync('ctr', ['--address', to.containerdSocket, '--namespace', 'k8s.io', 'images', 'import', tar]);
    return { ref, imageId: `sha256:${configId}`, bytes: statSync(layer).size, files };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Removes the image from the node's containerd (only this bench's ref). */
export function removeLinkerdImage(ref: string, containerdSocket: string): void {
  try {
    execFileSync('ctr', ['--address', containerdSocket, '--namespace', 'k8s.io', 'images', 'rm', ref], {
      stdio: 'ignore',
    });
  } catch {
    /* already gone */
  }
}
