import { describe, expect, it } from 'vitest';
import { imageRepository, resolveImage } from './images.js';
import { repoRoot } from './paths.js';

describe('image table', () => {
  it.each([
    ['ghcr.io/minimesh/proxy:v0.1.0', 'packages/proxy/dist/main.js'],
    ['ghcr.io/minimesh/proxy-init:v0.1.0', 'packages/proxy-init/dist/main.js'],
    ['ghcr.io/minimesh/destination@sha256:abc', 'packages/destination/dist/main.js'],
    ['ghcr.io/minimesh/identity', 'packages/identity/dist/main.js'],
    ['ghcr.io/minimesh/injector:dev', 'packages/injector/dist/main.js'],
    ['minimesh.test/http-echo:v1', 'e2e/fixtures/http-echo.mjs'],
  ])('maps %s to %s', (image, file) => {
    const r = resolveImage(image, undefined, ['--flag']);
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.argv).toEqual([process.execPath, `${repoRoot}/${file}`, '--flag']);
  });

  it('maps a command naming a minimesh program (one image, several entry points)', () => {
    const r = resolveImage('ghcr.io/minimesh/controller:v1', ['/usr/local/bin/minimesh-destination'], ['-v']);
    expect(r.ok && r.argv).toEqual([process.execPath, `${repoRoot}/packages/destination/dist/main.js`, '-v']);
  });

  it('runs other commands as given', () => {
    const r = resolveImage('busybox', ['sleep', '10']);
    expect(r.ok && r.argv).toEqual(['sleep', '10']);
  });

  it('fails an unknown image with ErrImageNeverPull, naming it and the table', () => {
    const r = resolveImage('docker.io/library/nginx:1.27');
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.reason).toBe('ErrImageNeverPull');
      expect(r.message).toContain('docker.io/library/nginx:1.27');
      expect(r.message).toContain('images.ts');
    }
  });

  it('fails a test image without a fixture', () => {
    expect(resolveImage('minimesh.test/no-such-fixture:v1').ok).toBe(false);
  });

  it.each([
    ['a/b:v1', 'a/b'],
    ['localhost:5000/a/b:v1', 'localhost:5000/a/b'],
    ['localhost:5000/a', 'localhost:5000/a'],
    ['a@sha256:00', 'a'],
  ])('repository of %s is %s', (image, repo) => expect(imageRepository(image)).toBe(repo));
});
