import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { importImages, parseImageList, requireNodeImages, tarImageId } from './images.js';

const dir = mkdtempSync(join(tmpdir(), 'mm-lc-images-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('image lists', () => {
  it('parses `images.sh list` lines and refuses anything else', () => {
    expect(parseImageList('# comment\nregistry.k8s.io/pause:3.10 /c/pause.tar\n\n  a:1   /c/a.tar  \n')).toEqual([
      { ref: 'registry.k8s.io/pause:3.10', tar: '/c/pause.tar' },
      { ref: 'a:1', tar: '/c/a.tar' },
    ]);
    expect(() => parseImageList('a:1 /x.tar extra')).toThrow('image list line "a:1 /x.tar extra" is not valid');
  });
  it('names the build command for a node image that was not built', () => {
    expect(() => requireNodeImages([{ ref: 'registry.k8s.io/pause:3.10', tar: join(dir, 'nope.tar') }])).toThrow(
      `local cluster: image registry.k8s.io/pause:3.10 is not built (${join(dir, 'nope.tar')} is missing): run bash scripts/images.sh build`,
    );
  });
});

describe('tarImageId', () => {
  it("reads the image ID (config digest) from a docker-archive's manifest.json", () => {
    const id = 'a'.repeat(64);
    const src = join(dir, 'src');
    execFileSync('mkdir', ['-p', join(src, 'b'.repeat(64))]);
    writeFileSync(join(src, `${id}.json`), '{}');
    writeFileSync(join(src, 'b'.repeat(64), 'layer.tar'), Buffer.alloc(3000, 1));
    writeFileSync(
      join(src, 'manifest.json'),
      JSON.stringify([{ Config: `${id}.json`, RepoTags: ['x/y:1'], Layers: [`${'b'.repeat(64)}/layer.tar`] }]),
    );
    const tar = join(dir, 'img.tar');
    execFileSync('tar', ['-C', src, '-cf', tar, `${id}.json`, `${'b'.repeat(64)}/layer.tar`, 'manifest.json']);
    expect(tarImageId(tar, 'x/y:1')).toBe(`sha256:${id}`);
    writeFileSync(join(dir, 'junk.tar'), 'not a tar');
    expect(tarImageId(join(dir, 'junk.tar'), 'x/y:1')).toBeUndefined();
  });
});

describe('importImages', () => {
  it('imports a tar once when two refs name it (two concurrent imports of one image race in containerd)', async () => {
    const cache = mkdtempSync(join(tmpdir(), 'mm-lc-cache-'));
    const saved = process.env.MINIMESH_CACHE;
    process.env.MINIMESH_CACHE = cache;
    try {
      const shared = join(dir, 'shared.tar');
      const other = join(dir, 'other.tar');
      writeFileSync(shared, 'a');
      writeFileSync(other, 'b');
      const calls: string[] = [];
      const ctr = async (args: string[]): Promise<string> => {
        calls.push(args.join(' '));
        return '';
      };
      const refs = await importImages(
        ctr,
        [
          { ref: 'a:1', tar: shared },
          { ref: 'b:1', tar: shared },
          { ref: 'c:1', tar: other },
        ],
        () => undefined,
      );
      expect(refs).toEqual(['a:1', 'b:1', 'c:1']);
      expect(calls.filter((c) => c.startsWith('images import')).sort()).toEqual([
        `images import ${other}`,
        `images import ${shared}`,
      ]);
    } finally {
      if (saved === undefined) delete process.env.MINIMESH_CACHE;
      else process.env.MINIMESH_CACHE = saved;
      rmSync(cache, { recursive: true, force: true });
    }
  });
});
